// The `gsteer` bin (cli/gsteer.mjs) however it is reached: a symlink to it, `npm run` and
// `npx` in the checkout, and node_modules/.bin (and npx) in an empty folder after
// `npm pack` + `npm install <tarball>`. Each is a real child process; the checks are the
// help text, the exit codes (0 --help, 2 unknown command, 2 no command) and `gsteer data
// validate` on a demo file shipped in the tarball.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(REPO, 'cli/gsteer.mjs');
const USAGE = 'usage: gsteer <command> [options]';

// Child env: `node` (the bin's shebang) on PATH, and no npm_* variables inherited from an
// `npm test` parent (npm_config_local_prefix would point a nested npm at this checkout).
const KEEP = new Set(['npm_config_cache', 'npm_config_userconfig', 'npm_config_registry']);
const env: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_') || KEEP.has(k.toLowerCase())),
);
env.PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`;
// No help for onnxruntime-node's install script: gsteer does not install it (an optional peer
// dependency, loaded only for encoder.kind: onnx), so the packed install must work without.
for (const k of Object.keys(env)) if (/onnxruntime/i.test(k)) delete env[k];

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], cwd: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The three exit-code contracts of the top-level CLI, through `gsteer` started as `start`. */
async function expectFrontDoor(start: (args: string[]) => Promise<Ran>) {
  const help = await start(['--help']);
  expect(help.code, help.stderr).toBe(0);
  expect(help.stdout.startsWith(USAGE)).toBe(true);
  for (const name of ['train', 'sft', 'serve', 'data', 'demo']) expect(help.stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
  const unknown = await start(['bogus']);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('gsteer: unknown command "bogus"');
  expect(unknown.stderr).toContain(USAGE);
  const none = await start([]);
  expect(none.code).toBe(2);
  expect(none.stdout).toBe('');
  expect(none.stderr).toContain(USAGE);
}

let tmp: string;
beforeAll(() => void (tmp = mkdtempSync(join(tmpdir(), 'gsteer-bin-'))));
// the packed install leaves a node_modules tree; removing it can take a while on a loaded machine
afterAll(() => rmSync(tmp, { recursive: true, force: true }), 600_000);

describe('gsteer in the checkout', () => {
  it('runs through a symlink to cli/gsteer.mjs', async () => {
    const link = join(tmp, 'gsteer');
    symlinkSync(BIN, link);
    await expectFrontDoor((args) => run(link, args, tmp));
    const sub = await run(link, ['data', '--help'], tmp);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toContain('usage: gsteer data validate FILE...');
  }, 120_000);

  it('runs through `npm run gsteer --` and `npx gsteer`', async () => {
    const viaRun = await run('npm', ['run', '--silent', 'gsteer', '--', '--help'], REPO);
    expect(viaRun.code, viaRun.stderr).toBe(0);
    expect(viaRun.stdout.startsWith(USAGE)).toBe(true);
    const viaNpx = await run('npx', ['--offline', 'gsteer', 'bogus'], REPO);
    expect(viaNpx.code).toBe(2);
    expect(viaNpx.stderr).toContain('gsteer: unknown command "bogus"');
  }, 120_000);
});

describe('gsteer from the packed tarball', () => {
  // npm pack + install into an empty folder, offline from the npm cache `npm ci` filled.
  // No ONNXRUNTIME_NODE_INSTALL_CUDA (removed from the env above): onnxruntime-node is an
  // optional peer dependency, so the install does not fetch it or run its CUDA download.
  // --ignore-scripts: the bin is linked without install scripts, and none of them is needed
  // for --help or data validate (the optional tfjs-node's downloads libtensorflow, which fails
  // offline and is then skipped, slowly). Measured on the 2-core
  // machine: this test ~19 s alone (pack + install ~15 s), the file ~30 s alone and ~62 s
  // inside the full suite (two forks on shared cores).
  it('installs, and node_modules/.bin/gsteer answers --help, unknown commands and data validate', async () => {
    const packed = await run('npm', ['pack', '--json', '--pack-destination', tmp], REPO);
    expect(packed.code, packed.stderr).toBe(0);
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    const files = info!.files.map((f) => f.path);
    for (const f of [
      'cli/gsteer.mjs',
      'cli/main.ts',
      'cli/commands/data.ts',
      'configs/schema.ts',
      'configs/paper.yaml',
      'data/persona.ts',
      'data/demo/instances.jsonl',
    ])
      expect(files).toContain(f);
    expect(files.filter((f) => /^(tests|bench|models|node_modules)\//.test(f))).toEqual([]);

    const app = join(tmp, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'gsteer-pack-test', private: true }));
    const installed = await run('npm', ['install', join(tmp, info!.filename), '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], app);
    expect(installed.code, installed.stderr).toBe(0);

    expect(existsSync(join(app, 'node_modules/onnxruntime-node'))).toBe(false); // optional: not installed with gsteer

    const bin = join(app, 'node_modules/.bin/gsteer');
    expect(lstatSync(bin).isSymbolicLink()).toBe(true);
    expect(realpathSync(bin)).toBe(realpathSync(join(app, 'node_modules/gsteer/cli/gsteer.mjs'))); // the installed copy, not this checkout
    await expectFrontDoor((args) => run(bin, args, app));

    const demo = ['node_modules/gsteer/data/demo/instances.jsonl', 'node_modules/gsteer/data/demo/user_states.jsonl'];
    const ok = await run(bin, ['data', 'validate', ...demo], app);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(
      /^ok: node_modules\/gsteer\/data\/demo\/instances\.jsonl \(\d+ instances\), node_modules\/gsteer\/data\/demo\/user_states\.jsonl \(\d+ user states\)$/m,
    );
    writeFileSync(join(app, 'bad.jsonl'), '{"id": "x"}\n');
    const bad = await run(bin, ['data', 'validate', 'bad.jsonl'], app);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('bad.jsonl:1: [x] userId: required field is missing');

    const viaNpx = await run('npx', ['--offline', 'gsteer', '--help'], app);
    expect(viaNpx.code, viaNpx.stderr).toBe(0);
    expect(viaNpx.stdout.startsWith(USAGE)).toBe(true);
  }, 300_000); // pack + install took ~160 s with 8 jobs sharing 2 cores
});
