// A run's comparison (`gsteer eval compare` writes its tables and Figure 3 into
// RUN/eval/compare, checkpoints/layout.ts): /api/runs/<run>/compare lists the files,
// /api/runs/<run>/compare/<file> serves one. A requested name is looked up in the folder's
// listing, never joined from the URL, and must be a plain table / figure file name.
import { existsSync, readdirSync } from 'node:fs';
import { extname, join } from 'node:path';
import type express from 'express';
import type { Response } from 'express';
import type { ServedRun } from './served-run.ts';

const TYPES: Record<string, string> = {
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.md': 'text/plain; charset=utf-8', // shown, not downloaded
  '.csv': 'text/csv; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
};
const FILE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** The servable files of a run's comparison folder, sorted; [] when there is none. */
export function compareFiles(run: ServedRun): string[] {
  const dir = run.layout.compare;
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && FILE.test(e.name) && extname(e.name) in TYPES)
    .map((e) => e.name)
    .sort();
}

export function mountCompare(app: express.Express, runOf: (name: string, res: Response) => ServedRun | null): void {
  app.get('/api/runs/:run/compare', (req, res) => {
    const r = runOf(req.params.run, res);
    if (r) res.json({ run: r.name, files: compareFiles(r) });
  });
  app.get('/api/runs/:run/compare/:file', (req, res) => {
    const r = runOf(req.params.run, res);
    if (!r) return;
    const name = compareFiles(r).find((f) => f === req.params.file);
    if (!name)
      return void res
        .status(404)
        .type('text/plain')
        .send(`404: ${r.name} has no comparison file of that name (gsteer eval compare writes them into RUN/eval/compare)\n`);
    res.type(TYPES[extname(name)] as string).sendFile(join(r.layout.compare, name));
  });
}
