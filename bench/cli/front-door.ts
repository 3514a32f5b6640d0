// The CLI's front door as a newcomer meets it (issue 32 item 7): every faulty command line
// in tests/cli/faulty-inputs.ts run through the real CLI (node cli/gsteer.mjs, a child
// process each, two at a time, 60 s limit each), printed as a Markdown table: the input, the
// exit code, the message's first line, and whether it is what the CLI promises (the
// expected code, no stack trace). Run: npx tsx bench/cli/front-door.ts [--out FILE] [--repo DIR]
// (--repo: another checkout's CLI, e.g. main before the fixes, for the before/after table).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { faultyInputs, makeFixtures, type FaultyInput } from '../../tests/cli/faulty-inputs.ts';
import { REPO } from '../../tests/e2e/helpers.ts';

const STACK = /\n\s+at [^\n]+[:(][^\n]*\d+:\d+\)?/;

interface Row {
  input: FaultyInput;
  code: number | null;
  first: string;
  ok: boolean;
}

function runCli(repo: string, argv: string[], dir: string, env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [join(repo, 'cli/gsteer.mjs'), ...argv], {
      cwd: repo,
      env: { ...process.env, GSTEER_PARTS: 'synthetic', TMPDIR: dir, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    const t = setTimeout(() => p.kill('SIGKILL'), 60_000);
    p.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, out });
    });
  });
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/`/g, "'");

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' }, repo: { type: 'string', default: REPO } } });
  const repo = values.repo as string;
  const dir = mkdtempSync(join(tmpdir(), 'gsteer-front-door-'));
  const fx = makeFixtures(dir);
  const inputs = faultyInputs(fx);
  const rows: Row[] = new Array(inputs.length);
  let next = 0;
  const t0 = Date.now();
  await Promise.all(
    [0, 1].map(async () => {
      while (next < inputs.length) {
        const i = next++;
        const input = inputs[i]!;
        const { code, out } = await runCli(repo, input.argv, dir, input.env);
        // the line that says what the input must say (else the first): the message a newcomer reads for it
        const lines = out.split('\n').filter((l) => l.trim());
        const first = (lines.find((l) => input.says?.test(l)) ?? lines[0] ?? '').trim().replaceAll(dir, '$TMP').replaceAll(repo, '.');
        const ok = code === (input.code ?? 2) && !STACK.test(out) && (!input.says || input.says.test(out));
        rows[i] = { input, code, first: first.length > 150 ? `${first.slice(0, 147)}...` : first, ok };
        process.stderr.write(`${ok ? '.' : 'F'}`);
      }
    }),
  );
  rmSync(dir, { recursive: true, force: true });
  const lines = [
    `| # | faulty input | command | exit | message (the line that names the problem) | as promised |`,
    `|---|---|---|---|---|---|`,
    ...rows.map(
      (r, i) =>
        `| ${i + 1} | ${cell(r.input.label)} | \`gsteer ${cell(r.input.argv.join(' ').replaceAll(dir, '$TMP'))}\` | ${r.code ?? 'killed'} | ${cell(r.first)} | ${r.ok ? 'yes' : '**no**'} |`,
    ),
    '',
    `${rows.filter((r) => r.ok).length} of ${rows.length} as promised (exit 2 with the fix, or 1 where data validate found problems; no stack trace); ${((Date.now() - t0) / 1000).toFixed(0)} s`,
  ];
  process.stderr.write('\n');
  console.log(lines.join('\n'));
  if (values.out) writeFileSync(values.out, `${lines.join('\n')}\n`);
}

await main();
