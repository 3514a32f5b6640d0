// The conformance script (tests/conformance/tinker_sdk.py) with the OFFICIAL Tinker Python SDK
// 0.25.0 against gsteer's trainer service. Where python3 cannot import the SDK the test says so
// (and fails under CI=true, where .ci/run has installed what it needs): never a silent pass.
//   1. the protocol: the service in-process over the toy engine (tests/helpers/toy-engine.ts),
//      every SDK path the script walks, in ~2 s;
//   2. the product: `gsteer trainer serve` (a separate process, real HTTP) over the tiny demo
//      model and gsteer's tfjs engine, with the serve/ sampler: cross_entropy,
//      importance_sampling and ppo, the loss falling, sampler logprobs = forward's, resume equal.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startTrainerService } from '../../trainer/service/server.ts';
import { ToyEngine, ToySampler } from '../helpers/toy-engine.ts';
import { findTinkerSdk, type TinkerSdk } from '../helpers/tinker-sdk.ts';
import { cli, killRun, waitFor } from '../e2e/helpers.ts';

const run = promisify(execFile);
const SCRIPT = new URL('./tinker_sdk.py', import.meta.url).pathname;
const sdk = findTinkerSdk();
const missing = 'missing' in sdk ? sdk.missing : null;
if (missing) console.warn(`SKIPPED (Tinker SDK conformance): ${missing}`);

export async function conformance(py: TinkerSdk, args: string[], timeoutMs: number): Promise<string> {
  const { stdout, stderr } = await run('python3', [SCRIPT, ...args], { env: { ...py.env, TINKER_API_KEY: 'tml-gsteer-conformance', TINKER_TELEMETRY: '0' }, timeout: timeoutMs }).catch((e: { stdout?: string; stderr?: string }) => {
    throw new Error(`conformance script failed:\n${e.stdout ?? ''}\n${(e.stderr ?? '').slice(-3000)}`);
  });
  if (stderr.trim()) console.error(stderr.slice(-2000));
  console.log(stdout);
  return stdout;
}

describe.skipIf(missing !== null && !process.env.CI)('Tinker SDK 0.25.0 conformance', () => {
  const py = () => {
    if (missing) throw new Error(`CI=true and ${missing}`);
    return sdk as TinkerSdk;
  };

  it('the protocol: the official SDK against the service over the toy engine', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'gsteer-conformance-'));
    const svc = await startTrainerService({ baseModel: 'toy/bigram-16', maxContextLength: 64, tokenizerId: 'none', arch: 'toy', stateDir, sampler: new ToySampler(), createEngine: async ({ lora }) => new ToyEngine(lora.seed) });
    try {
      const out = await conformance(py(), ['--base-url', svc.url, '--base-model', 'toy/bigram-16', '--prompt', '1,2,3', '--losses', 'cross_entropy,importance_sampling', '--lr', '0.05'], 60_000);
      expect(out).toMatch(/^ALL PASSED/m);
      expect(out).not.toMatch(/^FAIL/m);
    } finally {
      await svc.close();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('gsteer trainer serve over the tiny model: the official SDK end to end', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'gsteer-conformance-tiny-'));
    const serve = cli(['trainer', 'serve', '--model', 'models/tiny-demo', '--state-dir', stateDir, '--port', '0']);
    let out = '';
    serve.proc.stdout!.on('data', (d) => (out += d));
    try {
      await waitFor(() => /listening on (http:\/\/\S+)/.test(out), 60_000, 'gsteer trainer serve to listen');
      const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;
      // prompt <|im_start|>user\n (ids the demo's trimmed vocabulary keeps); the base samples the rest
      const res = await conformance(py(), ['--base-url', url, '--base-model', 'models/tiny-demo', '--prompt', '151644,872,198'], 120_000);
      expect(res).toMatch(/^PASS forward_backward ppo:/m);
      expect(res).toMatch(/^ALL PASSED/m);
      expect(res).not.toMatch(/^FAIL/m);
      serve.proc.kill('SIGTERM');
      expect((await serve.done).code).toBe(0);
    } finally {
      killRun(serve);
      rmSync(stateDir, { recursive: true, force: true });
    }
  }, 180_000);
});
