// `gsteer data build`'s front door and outputs (issue 32 item 7), through the command in
// process on data/raw-demo with the embedded rules: the three outputs are one set with
// manifest.json last (a build stopped between its renames is named by every reader, and the
// next build sweeps its temp files); --out that is the raw folder, or another build's folder,
// is refused (--force says what it replaces); a pair whose candidates are all dropped is
// refused with the pair and the reasons; rubric weight 0 is refused; a split with no
// training pairs is refused with the counts that made it so.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/main.ts';

const raw = join(import.meta.dirname, '../../data/raw-demo');
let root: string;
let said: string[];
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'gsteer-build-out-'));
  said = [];
  const keep = (...a: unknown[]) => void said.push(a.join(' '));
  vi.spyOn(console, 'log').mockImplementation(keep);
  vi.spyOn(console, 'error').mockImplementation(keep);
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterEach(() => {
  vi.restoreAllMocks();
  rmSync(root, { recursive: true, force: true });
});
afterAll(() => vi.restoreAllMocks());
const build = (...args: string[]) => main(['data', 'build', ...args]);
const text = () => said.join('\n');

describe('data build writes its outputs as one set', () => {
  it('manifest.json last, listing each file; a set cut between its renames is named by readers; the next build sweeps temps', async () => {
    const out = join(root, 'built');
    expect(await build(raw, '--out', out, '--seed', '1')).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['build_report.json', 'instances.jsonl', 'manifest.json', 'user_states.jsonl']);
    const m = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(Object.keys(m.files).sort()).toEqual(['build_report.json', 'instances.jsonl', 'user_states.jsonl']);
    expect(m.raw).toBe(raw);
    // what a kill between the renames leaves: no manifest, one file already new, a temp of another
    rmSync(join(out, 'manifest.json'));
    writeFileSync(join(out, `user_states.jsonl.tmp-999999-0badc0de`), 'half');
    said = [];
    expect(await main(['data', 'validate', join(out, 'instances.jsonl')])).toBe(1);
    expect(text()).toContain(`${out} has no manifest.json: gsteer data build stopped before its outputs were a whole set; run the build again`);
    expect(await build(raw, '--out', out, '--seed', '1')).toBe(0); // an earlier build of the same raw folder: rebuilt
    expect(readdirSync(out).sort()).toEqual(['build_report.json', 'instances.jsonl', 'manifest.json', 'user_states.jsonl']);
    expect(text()).toContain('user_states.jsonl.tmp-999999-0badc0de, a temp file an earlier build left');
    // a file changed after the build no longer matches its manifest
    writeFileSync(join(out, 'user_states.jsonl'), '');
    said = [];
    expect(await main(['data', 'validate', join(out, 'user_states.jsonl')])).toBe(1);
    expect(text()).toContain('user_states.jsonl is not the file');
  });
});

describe('data build --out', () => {
  it('the raw folder itself is refused; another build is refused, and --force says what it replaces', async () => {
    const rawCopy = join(root, 'raw');
    cpSync(raw, rawCopy, { recursive: true });
    expect(await build(rawCopy, '--out', rawCopy)).toBe(2);
    expect(text()).toContain(`--out ${rawCopy} is the input ${rawCopy}`);
    const out = join(root, 'built');
    expect(await build(rawCopy, '--out', out)).toBe(0);
    said = [];
    expect(await build(raw, '--out', out)).toBe(2);
    expect(text()).toContain(`is not empty (the build of ${rawCopy}) and is not an earlier data build of ${raw}; give a new or empty folder, or pass --force`);
    mkdirSync(join(out, 'cache'));
    writeFileSync(join(out, 'notes.md'), 'mine');
    said = [];
    expect(await build(raw, '--out', out, '--force')).toBe(0);
    expect(text()).toMatch(/--force: replacing .*build_report\.json, .*cache, .*manifest\.json.* \(the build of .*\/raw\)/);
    expect(readFileSync(join(out, 'notes.md'), 'utf8')).toBe('mine'); // other files stay
    expect(JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')).raw).toBe(raw);
  });
});

describe('data build refuses what would make invalid data', () => {
  it('a pair whose candidates are all dropped is left out, named with each reason', async () => {
    const r = join(root, 'raw');
    cpSync(raw, r, { recursive: true });
    // a task whose only rubric item is presentation: the superficial rule drops it
    const tasks = readFileSync(join(r, 'tasks.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    tasks[0].rubric = [{ criterion: 'Uses a clear format with short paragraphs', weight: 1, dimension: 'presentation' }];
    writeFileSync(join(r, 'tasks.jsonl'), tasks.map((t) => JSON.stringify(t)).join('\n') + '\n');
    const out = join(root, 'built');
    expect(await build(r, '--out', out, '--seed', '1')).toBe(1);
    expect(text()).toMatch(
      new RegExp(
        `not built: \\S+ at step validate: every candidate target was dropped \\(c\\d+ "A clear format with short paragraphs": superficial\\); the pair is left out`,
      ),
    );
    expect(text()).not.toMatch(/no targets/); // the instances written are valid
    expect(existsSync(join(out, 'manifest.json'))).toBe(true);
  });

  it('rubric weight 0 is refused, naming file, line and field', async () => {
    const r = join(root, 'raw');
    cpSync(raw, r, { recursive: true });
    const tasks = readFileSync(join(r, 'tasks.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    tasks[1].rubric[0].weight = 0;
    writeFileSync(join(r, 'tasks.jsonl'), tasks.map((t) => JSON.stringify(t)).join('\n') + '\n');
    expect(await build(r, '--out', join(root, 'built'))).toBe(2);
    expect(text()).toMatch(/tasks\.jsonl:2: \[laptop\] rubric\[0\]\.weight: must be > 0 .*\(got 0\)/);
    expect(existsSync(join(root, 'built'))).toBe(false);
  });

  it('a split with no training pairs is refused with the counts that made it so', async () => {
    expect(await build(raw, '--out', join(root, 'built'), '--test-fraction', '1', '--held-out-users', '1')).toBe(2);
    expect(text()).toMatch(
      /the split of 20 pairs \(\d+ users, \d+ tasks\) has no training pairs: --test-fraction 1, --held-out-users 1, .*lower --test-fraction/,
    );
    expect(existsSync(join(root, 'built'))).toBe(false);
  });
});
