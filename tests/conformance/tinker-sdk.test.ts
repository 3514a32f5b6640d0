// The conformance script (tests/conformance/tinker_sdk.py) with the OFFICIAL Tinker Python SDK
// 0.25.0 against gsteer's trainer service. Where python3 cannot import the SDK the test says so
// (and fails under CI=true, where .ci/run has installed what it needs): never a silent pass.
//   1. the protocol: the service in-process over the toy engine (tests/helpers/toy-engine.ts),
//      every SDK path the script walks, in ~2 s;
//   2. the product: `gsteer trainer serve` (a separate process, real HTTP) over the tiny demo
//      model and gsteer's tfjs engine, with the serve/ sampler: cross_entropy,
//      importance_sampling, ppo, cispo and dro, the loss falling, sampler logprobs = forward's, resume equal;
//      then gsteer's own TypeScript client against the same server (protobuf + zstd and JSON).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startTrainerService } from '../../trainer/service/server.ts';
import { ToyEngine, ToySampler } from '../helpers/toy-engine.ts';
import { findTinkerSdk, type TinkerSdk } from '../helpers/tinker-sdk.ts';
import { cli, killRun, waitFor } from '../e2e/helpers.ts';
import { TinkerClient, TrainerCallAggregator } from '../../trainer/tinker/client/index.ts';
import type { EngineDatum } from '../../trainer/engine/types.ts';

const run = promisify(execFile);
const SCRIPT = new URL('./tinker_sdk.py', import.meta.url).pathname;
const sdk = findTinkerSdk();
const missing = 'missing' in sdk ? sdk.missing : null;
if (missing) console.warn(`SKIPPED (Tinker SDK conformance): ${missing}`);

export async function conformance(py: TinkerSdk, args: string[], timeoutMs: number): Promise<string> {
  const { stdout, stderr } = await run('python3', [SCRIPT, ...args], {
    env: { ...py.env, TINKER_API_KEY: 'tml-gsteer-conformance', TINKER_TELEMETRY: '0' },
    timeout: timeoutMs,
  }).catch((e: { stdout?: string; stderr?: string }) => {
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
    const svc = await startTrainerService({
      baseModel: 'toy/bigram-16',
      maxContextLength: 64,
      tokenizerId: 'none',
      arch: 'toy',
      stateDir,
      sampler: new ToySampler(),
      createEngine: async ({ lora }) => new ToyEngine(lora.seed),
    });
    try {
      const out = await conformance(
        py(),
        ['--base-url', svc.url, '--base-model', 'toy/bigram-16', '--prompt', '1,2,3', '--losses', 'cross_entropy,importance_sampling', '--lr', '0.05'],
        60_000,
      );
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
      for (const loss of ['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro'])
        expect(res).toMatch(new RegExp(`^PASS forward_backward ${loss}:`, 'm'));
      expect(res).toMatch(/^ALL PASSED/m);
      expect(res).not.toMatch(/^FAIL/m);
      // save_weights_for_sampler wrote a PEFT adapter folder (what vLLM and gsteer serve --adapter load)
      const run = readdirSync(stateDir).find((d) => existsSync(join(stateDir, d, 'sampler_weights', 'conformance-sampler')))!;
      expect(readdirSync(join(stateDir, run, 'sampler_weights', 'conformance-sampler')).sort()).toEqual([
        'adapter_config.json',
        'adapter_model.safetensors',
        'tinker_checkpoint.json',
      ]);
      await tsClient(url);
      serve.proc.kill('SIGTERM');
      expect((await serve.done).code).toBe(0);
    } finally {
      killRun(serve);
      rmSync(stateDir, { recursive: true, force: true });
    }
  }, 180_000);
});

/** gsteer's TypeScript client against `gsteer trainer serve`: the same numbers over protobuf + zstd and JSON, the loss falls, sampler = forward. */
async function tsClient(url: string): Promise<void> {
  const calls = new TrainerCallAggregator();
  const proto = await TinkerClient.connect({ baseUrl: url, keyPrefix: 'conformance-ts', sink: calls, heartbeatMs: 0 });
  const json = await TinkerClient.connect({ baseUrl: url, body: 'json', heartbeatMs: 0 });
  try {
    const base = 'models/tiny-demo';
    const prompt = [151644, 872, 198];
    const s0 = await proto.sample({ baseModel: base }, prompt, { maxTokens: 10, seed: 3 });
    const seq = [...prompt, ...s0.sequences[0]!.tokens];
    const d: EngineDatum = {
      tokens: seq.slice(0, -1),
      inputs: { target_tokens: seq.slice(1), weights: seq.slice(1).map((_, i) => (i < prompt.length - 1 ? 0 : 1)) },
    };
    const a = await proto.createModel({ baseModel: base, rank: 4, seed: 7, gsteer: { lora_alpha: 8 } });
    const b = await json.createModel({ baseModel: base, rank: 4, seed: 7, gsteer: { lora_alpha: 8 } });
    const adam = { learning_rate: 5e-3, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 1 };
    const losses: number[] = [];
    for (let k = 0; k < 3; k++) {
      const [fa, fb] = await Promise.all([a.forwardBackward([d], 'cross_entropy'), b.forwardBackward([d], 'cross_entropy')]);
      expect(fb.outputs[0]!.logprobs).toEqual(fa.outputs[0]!.logprobs); // protobuf + zstd and JSON: the same call
      losses.push(fa.metrics['loss:sum']!);
      await Promise.all([a.optimStep(adam), b.optimStep(adam)]);
    }
    console.log(`TS client: cross_entropy loss:sum by step ${losses.map((x) => x.toFixed(4)).join(', ')}`);
    expect(losses[2]!).toBeLessThan(losses[0]!);
    const path = await a.saveWeightsForSampler('ts-client');
    const s1 = await proto.sample({ modelPath: path }, prompt, { maxTokens: 10, seed: 5 });
    const seq1 = [...prompt, ...s1.sequences[0]!.tokens];
    const f = await a.forward([{ tokens: seq1.slice(0, -1), inputs: { target_tokens: seq1.slice(1), weights: seq1.slice(1).map(() => 1) } }], 'cross_entropy');
    const trainerLp = f.outputs[0]!.logprobs as number[];
    const diff = Math.max(...s1.sequences[0]!.logprobs.map((x, i) => Math.abs(x - trainerLp[prompt.length - 1 + i]!)));
    console.log(`TS client: sampler vs forward max |logprob diff| ${diff.toExponential(2)}`);
    expect(diff).toBeLessThan(2e-4);
    const m = calls.takeWindow();
    console.log(`TS client calls: ${JSON.stringify(m)}`);
    expect(m['trainer/calls']).toBeGreaterThan(10);
    expect(m['trainer/bytes_sent']).toBeGreaterThan(0);
  } finally {
    proto.close();
    json.close();
  }
}
