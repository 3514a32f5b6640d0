// docs/citations.ts: every "method §n" resolves to a heading of docs/method.md and no file
// cites a document outside the repository, on this repository and on planted input in a
// throwaway git repository (the checker reads tracked files from git's index).
//
// The planted texts are written with escapes (\u00a7 = the section sign, \x53 = "S",
// \x4e = "N") so that this file itself cites nothing: the repository-wide check scans it.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCitations, formatProblem, methodSections, type CitationProblem } from '../../docs/citations.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const S = '\u00a7';
const specName = '\x53PEC';
const notesName = '\x4eOTES';

describe('the repository', () => {
  it('cites only sections docs/method.md has, no document outside the repository, and only files it tracks', () => {
    expect(checkCitations(ROOT).map(formatProblem)).toEqual([]);
  });

  it('has the sections the code is cited by and the issues add (§1-§15, §3.1)', () => {
    const { sections, duplicates } = methodSections(readFileSync(join(ROOT, 'docs/method.md'), 'utf8'));
    for (let n = 1; n <= 15; n++) expect(sections.has(String(n)), `§${n}`).toBe(true);
    expect(sections.has('3.1')).toBe(true);
    expect(duplicates).toEqual([]);
  });
});

describe('planted input', () => {
  let dir = '';
  const write = (rel: string, text: string | Buffer) => {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'gsteer-citations-'));
    execFileSync('git', ['init', '-q'], { cwd: dir });
    write('docs/method.md', ['# Method', '', '## 1. One', '', '### 1.2 Sub', '', `See ${S}1.2 and ${S}3.`, '', '## 1. One again', ''].join('\n'));
    write('src/a.ts', [`// fine: method ${S}1 and method ${S}1.2`, `// bad: method ${S}2.1 here`, `// list: method ${S}1, ${S}1.2/${S}7`, ''].join('\n'));
    write('notes/b.md', ['Intro', `see ${specName}.md for the rest`, `and ${notesName}.md`, `per ${specName} ${S}4 and the ${specName}'s rule`, ''].join('\n'));
    write('data/c.json', JSON.stringify({ x: `${specName}.md method ${S}99` }));
    // file references (issue 33): src/a.ts and docs/method.md exist; src/gone.ts, docs/gone.md, seeds/paper.md and
    // STYLE.md do not; other/x.py is no folder of this repository, runs/ and RUN_DIR/ are outputs
    write(
      'notes/refs.md',
      [
        'see src/a.ts, ./src/a.ts and docs/method.md',
        'and src/gone.ts, docs/gone.md',
        'not other/x.py, runs/r/table2.md, RUN_DIR/eval/t.md',
        'per seeds/paper.md and STYLE.md',
        '',
      ].join('\n'),
    );
    write('src/rel.ts', '// a.ts beside me: ./a.ts, and a missing sibling ./b.ts\n');
    write('tests/t.ts', '// tests plant paths: src/planted.ts\n');
    write('bin.dat', Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from(`${specName}.md`)]));
    execFileSync('git', ['add', '-A'], { cwd: dir });
    write('untracked.ts', `// method ${S}99 and ${specName}.md`); // not in the index: not scanned
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reports exactly the unresolved citations and the outside documents, with file and line', () => {
    const got = checkCitations(dir).map(({ file, line, kind, text }: CitationProblem) => ({ file, line, kind, text }));
    expect(got).toEqual([
      // the method file: its second "## 1." heading, and its own bare §3 (it has §1 and §1.2 only)
      { file: 'docs/method.md', line: 7, kind: 'unresolved', text: `${S}3` },
      { file: 'docs/method.md', line: 9, kind: 'duplicate_heading', text: `${S}1` },
      { file: 'notes/b.md', line: 2, kind: 'outside', text: `${specName}.md` },
      { file: 'notes/b.md', line: 3, kind: 'outside', text: `${notesName}.md` },
      { file: 'notes/b.md', line: 4, kind: 'outside', text: `${specName} ${S}4` },
      { file: 'notes/b.md', line: 4, kind: 'outside', text: specName },
      { file: 'notes/refs.md', line: 2, kind: 'missing_file', text: 'src/gone.ts' },
      { file: 'notes/refs.md', line: 2, kind: 'missing_file', text: 'docs/gone.md' },
      { file: 'notes/refs.md', line: 4, kind: 'missing_file', text: 'seeds/paper.md' },
      { file: 'notes/refs.md', line: 4, kind: 'missing_file', text: 'STYLE.md' },
      { file: 'src/a.ts', line: 2, kind: 'unresolved', text: `method ${S}2.1` },
      // a section listed after a citation is checked too
      { file: 'src/a.ts', line: 3, kind: 'unresolved', text: `${S}7` },
      // relative to the citing file: ./a.ts is src/a.ts; ./b.ts is missing
      { file: 'src/rel.ts', line: 1, kind: 'missing_file', text: './b.ts' },
    ]);
  });

  it('says where and how to fix', () => {
    const [first] = checkCitations(dir).filter((p) => p.kind === 'unresolved' && p.file === 'src/a.ts');
    expect(formatProblem(first as CitationProblem)).toBe(
      `src/a.ts:2: "method ${S}2.1" names no heading of docs/method.md; cite a section it has (its headings are numbered "## n." / "### n.m") or add that section`,
    );
  });

  it('reports a missing method document instead of every citation', () => {
    renameSync(join(dir, 'docs/method.md'), join(dir, 'method.md.away'));
    try {
      expect(checkCitations(dir).map((p) => [p.file, p.kind])).toEqual([['docs/method.md', 'no_method_file']]);
    } finally {
      renameSync(join(dir, 'method.md.away'), join(dir, 'docs/method.md'));
    }
  });
});
