// `gsteer data build`'s outputs as one set: instances.jsonl, user_states.jsonl and
// build_report.json are written to temp files first (fsynced), then the old manifest.json
// goes (from here the folder says "no whole set"), the three are renamed into place, and
// manifest.json is written last with each file's sha256, the raw folder and the split seed.
// A reader (data/read.ts) of a file in a folder holding build_report.json checks the set: no
// manifest (a build stopped between its renames) or a sha256 that differs (a file from
// another build) is a problem naming the file and the fix. Temp files a killed build left are
// removed by the next one. The manifest also tells an --out folder this build may replace
// (the same raw folder) from another build's, which needs --force.
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { openAtomicWriter, removeStrayTemps, sha256File, writeFileAtomic } from '../../util/atomic.ts';

export const SET_FILES = ['instances.jsonl', 'user_states.jsonl', 'build_report.json'] as const;
export const MANIFEST = 'manifest.json';
/** What a data build folder holds besides the set: the request cache and the call records (LLM builds). */
export const BUILD_EXTRAS = ['cache', 'llm_calls.jsonl'] as const;

export interface BuildManifest {
  v: 1;
  kind: 'gsteer data build';
  raw: string;
  seed: number;
  steps: 'rules' | 'llm';
  files: Record<string, string>;
}

/** The manifest of a build folder, or null (none, or not readable). */
export function readBuildManifest(out: string): BuildManifest | null {
  try {
    const m = JSON.parse(readFileSync(join(out, MANIFEST), 'utf8')) as BuildManifest;
    return m.kind === 'gsteer data build' && m.files ? m : null;
  } catch {
    return null;
  }
}

/** Write the set (name -> text) as one: temps, manifest out, renames, manifest in. Returns stray temps it removed. */
export function writeBuildSet(out: string, contents: Record<(typeof SET_FILES)[number], string>, meta: Omit<BuildManifest, 'v' | 'kind' | 'files'>): string[] {
  const stray = removeStrayTemps(out, false);
  const temps = SET_FILES.map((name) => {
    const w = openAtomicWriter(join(out, name));
    try {
      w.write(contents[name]);
    } catch (e) {
      w.abort();
      throw e;
    }
    return w;
  });
  // every file written and fsynced before the set in place changes: a full disk stops here, the old set whole
  const staged: string[] = [];
  try {
    for (const w of temps) staged.push(w.stage());
  } catch (e) {
    for (const w of temps) w.abort();
    throw e;
  }
  rmSync(join(out, MANIFEST), { force: true });
  SET_FILES.forEach((name, i) => renameSync(staged[i] as string, join(out, name)));
  const files = Object.fromEntries(SET_FILES.map((name) => [name, sha256File(join(out, name))]));
  writeFileAtomic(
    join(out, MANIFEST),
    `${JSON.stringify({ v: 1, kind: 'gsteer data build', ...meta, raw: resolve(meta.raw), files } satisfies BuildManifest, null, 2)}\n`,
  );
  return stray;
}

/**
 * Why `file` cannot be read as part of a data build's set, or null: it sits in a build folder
 * (beside build_report.json) whose manifest is missing, or that does not list it as written.
 */
export function buildSetProblem(file: string): string | null {
  const dir = dirname(file);
  const name = basename(file);
  if (!(SET_FILES as readonly string[]).includes(name) || !existsSync(join(dir, 'build_report.json'))) return null;
  const m = readBuildManifest(dir);
  if (!m)
    return `${dir} has no ${MANIFEST}: gsteer data build stopped before its outputs were a whole set; run the build again (it sends no cached request twice)`;
  const want = m.files[name];
  if (want && existsSync(file) && sha256File(file) !== want)
    return `${name} is not the file ${join(dir, MANIFEST)} lists (its sha256 differs): it changed after the build or comes from another one; run the build again or restore the file`;
  return null;
}
