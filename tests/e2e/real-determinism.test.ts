// E2E determinism with the REAL parts and a policy that speaks the turn grammar: the demo's
// pretrained tiny base (models/tiny-demo, made by `gsteer demo`'s model phase), the
// embedded policy server, seed-grounded simulator, Redis user-state store, hashed encoder
// and tfjs LoRA trainer, one worker of each kind. A run SIGKILLed (whole process group)
// after update 1 and resumed ends with the same per-update metrics and a byte-identical
// adapter as an uninterrupted run with the same seed and config. Not vacuous: some turns
// are valid, so rewards differ inside a group (an episode that retrieves before its
// invalid turn pays the retrieval cost, one that asks or stops scores its coverage), the
// gradient is non-zero and the adapter moves between updates.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adapterBytes, cli, killRun, REPO, reproducibleMetrics, tempRun, waitFor, writeConfig, removeRuns } from './helpers.ts';

const BASE = join(REPO, 'models/tiny-demo');
const ref = tempRun('rdet-ref');
const k = tempRun('rdet-kill');
const env = { GSTEER_PARTS: 'real' };

const config = (t: typeof ref) => ({
  runName: 'rdet',
  runDir: join(t.dir, 'runs'),
  seed: 3,
  data: { instances: [join(REPO, 'data/demo/instances.jsonl')], userStates: join(REPO, 'data/demo/user_states.jsonl') },
  policy: { server: 'embedded', model: BASE },
  rollout: { groupSize: 4, maxTurns: 2, maxTokens: 384, concurrency: 4 },
  grpo: { maxUpdates: 3, learningRate: 1e-3, microBatchSize: 4, initialUserStates: join(REPO, 'data/demo/user_states.jsonl') },
  lora: { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] },
  trainer: { backend: 'wasm' },
  checkpoint: { every: 1, keep: 3 },
  queues: { prefix: t.prefix },
});

afterAll(() => removeRuns(ref, k));

describe('e2e: determinism with the real parts', () => {
  it('a run killed after update 1 and resumed equals an uninterrupted one, update for update and byte for byte', async () => {
    expect(existsSync(join(BASE, 'config.json')), `${BASE} is missing: it is committed; \`npm run demo\` remakes it`).toBe(true);
    const runRef = join(ref.dir, 'runs', 'rdet');
    const runK = join(k.dir, 'runs', 'rdet');
    const r = cli(['train', '--config', writeConfig(ref.dir, config(ref))], env);
    const killed = cli(['train', '--config', writeConfig(k.dir, config(k))], env);
    // checkpoints are written whole and renamed into place: once the folder exists it is complete
    await waitFor(() => existsSync(join(runK, 'checkpoints', 'step-000001')), 240_000, 'checkpoint 1 of the run to kill');
    killRun(killed);
    expect((await killed.done).signal).toBe('SIGKILL');
    const resumed = await cli(['resume', runK], env).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    const x = await r.done;
    expect(x.code, x.stderr).toBe(0);

    const mRef = reproducibleMetrics(runRef);
    expect(mRef.map((m) => m.step)).toEqual([1, 2, 3]);
    expect(reproducibleMetrics(runK)).toEqual(mRef);
    expect(adapterBytes(runK, 3).equals(adapterBytes(runRef, 3))).toBe(true);

    // Not vacuous: valid turns, rewards that differ within a group, a real gradient.
    expect(Math.max(...mRef.map((m) => (m['turns/retrieve'] as number) + (m['turns/ask'] as number)))).toBeGreaterThan(0);
    expect(Math.max(...mRef.map((m) => m.reward_std as number))).toBeGreaterThan(0);
    expect(Math.max(...mRef.map((m) => m.grad_norm as number))).toBeGreaterThan(0);
    const ckptAdapter = (step: number) => readFileSync(join(runRef, 'checkpoints', `step-00000${step}`, 'adapter', 'adapter_model.safetensors'));
    expect(ckptAdapter(3).equals(adapterBytes(runRef, 3))).toBe(true);
    expect(ckptAdapter(3).equals(ckptAdapter(1))).toBe(false);
  }, 600_000);
});
