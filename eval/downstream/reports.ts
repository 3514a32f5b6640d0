// Where downstream reports live (method §12). One folder per method (its name as a slug), one
// file per report: `<method-slug>/<instanceId>.e<episode>.md`, and beside a report gsteer's
// agent wrote, `<...>.query.txt` with the query it was written for: a stored report is reused
// only for the same query (so a re-run sends nothing, and a changed q* is researched again).
// `--reports DIR` reads reports produced elsewhere in the same layout (the query file is
// optional there; `<instanceId>.md` is accepted for episode 0), and never calls an agent.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../util/atomic.ts';
import { InputError } from '../../util/errors.ts';

/** "G-STEER" -> "g-steer", "Original Query" -> "original-query". */
export function slug(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'method'
  );
}

/** An instance id as a file name: path separators and odd characters become "_". */
const fileId = (id: string) => id.replace(/[^A-Za-z0-9._-]/g, '_');

export class ReportStore {
  /** external: reports made elsewhere (--reports DIR); a missing report is an error. */
  constructor(
    readonly dir: string,
    readonly external: boolean,
  ) {}

  path(method: string, instanceId: string, episode: number): string {
    return join(this.dir, slug(method), `${fileId(instanceId)}.e${episode}.md`);
  }

  /** The stored report for this query, or null (gsteer's own store: none, or one for another query). */
  read(method: string, instanceId: string, episode: number, query: string): string | null {
    const file = this.path(method, instanceId, episode);
    const alt = join(this.dir, slug(method), `${fileId(instanceId)}.md`);
    const found = existsSync(file) ? file : this.external && episode === 0 && existsSync(alt) ? alt : null;
    if (!found) {
      if (this.external)
        throw new InputError(
          `--reports ${this.dir}: no report for method "${method}", instance "${instanceId}", episode ${episode}; expected ${file}${episode === 0 ? ` (or ${alt})` : ''}. Write each report there, one Markdown/text file per report`,
        );
      return null;
    }
    const qFile = `${file.replace(/\.md$/, '')}.query.txt`;
    if (existsSync(qFile) && readFileSync(qFile, 'utf8') !== query) {
      if (this.external)
        throw new InputError(
          `${qFile}: the report was written for another query than method "${method}" sends for instance "${instanceId}"; regenerate it or remove the .query.txt file`,
        );
      return null;
    }
    const text = readFileSync(found, 'utf8');
    if (this.external && !text.trim()) throw new InputError(`${found}: the report is empty; an external report must hold the agent's text`);
    return text;
  }

  write(method: string, instanceId: string, episode: number, query: string, report: string): void {
    const file = this.path(method, instanceId, episode);
    writeFileAtomic(`${file.replace(/\.md$/, '')}.query.txt`, query);
    writeFileAtomic(file, report);
  }
}
