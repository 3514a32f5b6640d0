// The citation check of docs/method.md (issue 25, "the method in the repo"):
// - every `method §n` / `method §n.m` in a tracked text file, and the sections listed after
//   it (`method §2, §6`, `method §5/§9`, `method §3-§4`, `... and §7`), must name a numbered
//   heading of docs/method.md (`## 4. Reward`, `### 4.3 Matching`);
// - inside docs/method.md every `§n` must name one of its own headings;
// - no file may mention the project's spec or notes files that live outside the repository
//   (the word written in capitals, its `.md` file, or its `§n` citations): they are
//   reported with file and line so the citation can point into docs/method.md instead;
// - every reference to a file of the repository must name one that is tracked (issue 33): a
//   path ending in .md, .ts, .mjs, .cjs, .yaml, .yml, .ebnf, .py or .sh whose first folder is a
//   folder of the repository (from the root or from the citing file's folder), any path to a
//   `.md` document, and a bare document name in capitals (`README.md`) must resolve
//   (from the root, from the citing file's folder, or, for a bare capitals name, as any tracked
//   file's name); a `./path` must resolve. Paths under `runs/` (run outputs) and behind a placeholder in capitals
//   (`RUN_DIR/`) are outputs, not references; files under tests/ plant paths on purpose and are
//   not checked for this rule.
// Tracked files are read from the index (`git ls-files`); JSON and JSONL files (data,
// lockfiles) and binary files (a NUL byte in the first 8 KiB) are not scanned.
//
//   node --import tsx docs/citations.ts [ROOT]    prints one line per problem; exit 1 if any
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const METHOD_FILE = 'docs/method.md';

export type ProblemKind = 'unresolved' | 'outside' | 'duplicate_heading' | 'no_method_file' | 'missing_file';

export interface CitationProblem {
  file: string; // path relative to the repository root, as git lists it
  line: number; // 1-based; 0 when the problem is the whole file
  kind: ProblemKind;
  text: string; // the citation or mention, as found
  message: string; // the rule and the fix
}

const SECTION = String.raw`(\d+(?:\.\d+)*)`;
/** A numbered heading: `## 4. Reward`, `### 4.3 Matching`, `## §4 Reward`. */
const HEADING = new RegExp(String.raw`^#{1,6}\s+§?${SECTION}\.?(?:\s|$)`);
/** `method §n`, then any sections listed after it with `,` `/` `-` `–` `&` `and` `or`. */
const CITATION = new RegExp(String.raw`\bmethod\s+§\s*${SECTION}((?:\s*(?:,|/|-|–|&|\band\b|\bor\b)\s*§\s*\d+(?:\.\d+)*)*)`, 'gi');
const BARE = new RegExp(String.raw`§\s*${SECTION}`, 'g');
/** Documents outside the repository: the spec (its name, its file, its `§n`) and the notes file. */
const OUTSIDE = new RegExp(String.raw`\bSPEC(?:\.md\b(?:\s*§\s*\d+(?:\.\d+)*)?|\s*§\s*\d+(?:\.\d+)*|\b)|\bNOTES\.md\b`, 'g');
const SKIPPED_EXTENSIONS = ['.json', '.jsonl'];
/** A path-like reference to a document or source file (not part of a URL, a glob or a placeholder). */
const FILE_REF = /(?<![\w/.@:$<{*-])((?:\.\/)?(?:[\w.-]+\/)*[\w-][\w.-]*\.(?:md|ts|mjs|cjs|yaml|yml|ebnf|py|sh))(?![\w/-])/g;

/** What the repository holds, for the file-reference rule. */
export interface RepoIndex {
  files: ReadonlySet<string>;
  dirs: ReadonlySet<string>;
  names: ReadonlySet<string>;
}

export function repoIndex(files: readonly string[]): RepoIndex {
  const dirs = new Set<string>();
  for (const f of files) {
    const parts = f.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  return { files: new Set(files), dirs, names: new Set(files.map((f) => f.split('/').pop() as string)) };
}

/** The references of one line that name no tracked file (see the file comment), with their columns. */
export function missingFiles(line: string, file: string, repo: RepoIndex): { at: number; text: string }[] {
  const out: { at: number; text: string }[] = [];
  const here = dirname(file);
  for (const m of line.matchAll(FILE_REF)) {
    const raw = m[1] as string;
    const ref = raw.replace(/^\.\//, '');
    const segments = ref.split('/');
    const fromHere = posix.normalize(posix.join(here, ref));
    const exists = repo.files.has(ref) || repo.files.has(fromHere);
    if (raw.startsWith('./')) {
      if (!exists) out.push({ at: m.index, text: raw }); // explicitly relative: must be there
      continue;
    }
    if (segments.length === 1) {
      if (/^[A-Z][A-Z0-9_-]*\.md$/.test(ref) && !repo.names.has(ref)) out.push({ at: m.index, text: ref });
      continue;
    }
    const first = segments[0] as string;
    if (first === 'runs' || /^[A-Z_]+$/.test(first)) continue; // run outputs and placeholders
    const inRepo = repo.dirs.has(first) || repo.dirs.has(posix.normalize(posix.join(here, first)));
    if ((inRepo || ref.endsWith('.md')) && !exists) out.push({ at: m.index, text: ref });
  }
  return out;
}

/** The section numbers of docs/method.md's headings (outside code fences), and any repeated. */
export function methodSections(markdown: string): { sections: Set<string>; duplicates: { line: number; section: string }[] } {
  const sections = new Set<string>();
  const duplicates: { line: number; section: string }[] = [];
  let fenced = false;
  markdown.split(/\r?\n/).forEach((line, i) => {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = fenced ? null : HEADING.exec(line);
    if (!m) return;
    const section = m[1] as string;
    if (sections.has(section)) duplicates.push({ line: i + 1, section });
    sections.add(section);
  });
  return { sections, duplicates };
}

interface Found {
  at: number; // column, for ordering within a line
  problem: Omit<CitationProblem, 'file' | 'line'>;
}

function unresolved(at: number, text: string): Found {
  return {
    at,
    problem: {
      kind: 'unresolved',
      text,
      message: `"${text}" names no heading of ${METHOD_FILE}; cite a section it has (its headings are numbered "## n." / "### n.m") or add that section`,
    },
  };
}

/**
 * Problems of one file's text. In the method file itself every bare `§n` is a citation. With
 * `refs` (the file's path and the repository's index) file references are checked too.
 */
export function scanText(
  text: string,
  sections: ReadonlySet<string>,
  isMethodFile: boolean,
  refs?: { file: string; repo: RepoIndex },
): { line: number; problem: Omit<CitationProblem, 'file' | 'line'> }[] {
  const out: { line: number; problem: Omit<CitationProblem, 'file' | 'line'> }[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const found: Found[] = [];
    if (isMethodFile) {
      for (const m of line.matchAll(BARE)) if (!sections.has(m[1] as string)) found.push(unresolved(m.index, `§${m[1]}`));
    } else {
      for (const m of line.matchAll(CITATION)) {
        if (!sections.has(m[1] as string)) found.push(unresolved(m.index, `method §${m[1]}`));
        const listed = m[2] ?? '';
        const listedAt = m.index + m[0].length - listed.length;
        for (const c of listed.matchAll(BARE)) if (!sections.has(c[1] as string)) found.push(unresolved(listedAt + c.index, `§${c[1]}`));
      }
    }
    for (const m of line.matchAll(OUTSIDE))
      found.push({
        at: m.index,
        problem: {
          kind: 'outside',
          text: m[0],
          message: `"${m[0]}" refers to a document outside the repository; cite the section of ${METHOD_FILE} that says it ("method §n")`,
        },
      });
    const outside = new Set(found.filter((f) => f.problem.kind === 'outside').map((f) => f.at));
    if (refs)
      for (const r of missingFiles(line, refs.file, refs.repo))
        if (!outside.has(r.at))
          // already reported as a document outside the repository
          found.push({
            at: r.at,
            problem: {
              kind: 'missing_file',
              text: r.text,
              message: `"${r.text}" names no file of the repository; point it at a tracked file (git ls-files), or cite the section of ${METHOD_FILE} that says it`,
            },
          });
    found.sort((a, b) => a.at - b.at);
    for (const f of found) out.push({ line: i + 1, problem: f.problem });
  });
  return out;
}

/** Every tracked path (`git ls-files`, index order). */
export function listedFiles(root: string): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    .split('\0')
    .filter(Boolean);
}

/** Tracked files (`git ls-files`, index order) that are scanned: present, not JSON, not binary. */
export function trackedTextFiles(root: string): { file: string; text: string }[] {
  const listed = listedFiles(root);
  const out: { file: string; text: string }[] = [];
  for (const file of listed) {
    if (SKIPPED_EXTENSIONS.some((ext) => file.endsWith(ext))) continue;
    const abs = join(root, file);
    if (!existsSync(abs)) continue; // deleted in the working tree, not yet in the index
    const bytes = readFileSync(abs);
    if (bytes.subarray(0, 8192).includes(0)) continue;
    out.push({ file, text: bytes.toString('utf8') });
  }
  return out;
}

/** Every citation problem of the repository (or any git work tree) at `root`. */
export function checkCitations(root: string): CitationProblem[] {
  const methodPath = join(root, METHOD_FILE);
  if (!existsSync(methodPath))
    return [
      {
        file: METHOD_FILE,
        line: 0,
        kind: 'no_method_file',
        text: '',
        message: `${METHOD_FILE} does not exist; it is the method document every "method §n" cites`,
      },
    ];
  const { sections, duplicates } = methodSections(readFileSync(methodPath, 'utf8'));
  const files = trackedTextFiles(root);
  const repo = repoIndex(listedFiles(root));
  const problems: CitationProblem[] = [];
  if (!files.some((f) => f.file === METHOD_FILE))
    problems.push({ file: METHOD_FILE, line: 0, kind: 'no_method_file', text: '', message: `${METHOD_FILE} exists but git does not track it; git add it` });
  for (const { file, text } of files) {
    const found = scanText(text, sections, file === METHOD_FILE, file.startsWith('tests/') ? undefined : { file, repo });
    if (file === METHOD_FILE)
      for (const d of duplicates)
        found.push({
          line: d.line,
          problem: { kind: 'duplicate_heading', text: `§${d.section}`, message: `section §${d.section} has a second heading; number each section once` },
        });
    found.sort((a, b) => a.line - b.line); // stable: within a line, left to right
    for (const { line, problem } of found) problems.push({ file, line, ...problem });
  }
  return problems;
}

export function formatProblem(p: CitationProblem): string {
  return `${p.file}:${p.line}: ${p.message}`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const problems = checkCitations(root);
  for (const p of problems) console.log(formatProblem(p));
  console.log(
    problems.length
      ? `${problems.length} citation problem(s)`
      : `citations: every "method §n" resolves in ${METHOD_FILE}; no document outside the repository is cited; every file reference names a tracked file`,
  );
  process.exitCode = problems.length ? 1 : 0;
}
