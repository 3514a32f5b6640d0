// E2E with the REAL parts (no synthetic stand-ins): a tiny random Qwen3 model made by
// `gsteer model init`, the embedded `gsteer serve` policy server, rollout/ episodes with the
// seed-grounded simulator and the Redis user-state store, reward/ with the hashed encoder,
// and the tfjs LoRA trainer. Two updates; checks the run completes, checkpoints verify, the
// adapter is in the PEFT layout and its config matches lora.*.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyCheckpoint } from '../../checkpoints/checkpoint.ts';
import { cli, REPO, reproducibleMetrics, tempRun, writeConfig, removeRuns } from './helpers.ts';

const t = tempRun('real');
afterAll(() => removeRuns(t));

describe('e2e: real parts', () => {
  it('gsteer train runs two GRPO updates with the embedded model, server, simulator, encoder and trainer', async () => {
    const model = join(t.dir, 'tiny');
    const init = await cli(['model', 'init', '--preset', 'tiny', '--out', model, '--seed', '1'], { GSTEER_PARTS: 'real' }).done;
    expect(init.code, init.stderr).toBe(0);
    const cfg = {
      runName: 'real',
      runDir: join(t.dir, 'runs'),
      seed: 5,
      data: { instances: [join(REPO, 'data/demo/instances.jsonl')], userStates: join(REPO, 'data/demo/user_states.jsonl') },
      policy: { server: 'embedded', model },
      rollout: { groupSize: 2, maxTurns: 1, maxTokens: 64, concurrency: 2 }, // constrained (the default): 64 >= the shortest turn
      grpo: { maxUpdates: 2, learningRate: 1e-3, microBatchSize: 2, initialUserStates: join(REPO, 'data/demo/user_states.jsonl') },
      lora: { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] },
      checkpoint: { every: 1, keep: 2 },
      queues: { prefix: t.prefix },
    };
    const x = await cli(['train', '--config', writeConfig(t.dir, cfg)], { GSTEER_PARTS: 'real' }).done;
    expect(x.code, x.stderr).toBe(0);
    const runDir = join(t.dir, 'runs', 'real');
    const metrics = reproducibleMetrics(runDir);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics)
      for (const k of ['reward', 'rewards/coverage/mean', 'rewards/c_acq/mean', 'invalid_rate', 'entropy']) expect(typeof m[k]).toBe('number');
    // Constrained rollouts: even a random model writes only valid turns (the grammar and the
    // token filter), and the trainer scores each token under the server's mask, so at policy
    // lag 0 its logprobs are the server's (ratio 1; raw scoring would give Z_allowed / Z_all < 1).
    for (const m of metrics) {
      expect(m.invalid_rate).toBe(0);
      expect(m['turns/constrained_share']).toBe(1);
      expect(m['constraint/turns']).toBe(2);
      expect(m['constraint/replay_rejected']).toBe(0);
      expect(m['sampling/logprob_diff/max']).toBeLessThan(1e-5);
      expect(Math.abs((m['sampling/importance_sampling_ratio/mean'] as number) - 1)).toBeLessThan(1e-5);
    }
    const ckpt = join(runDir, 'checkpoints', 'step-000002');
    expect(verifyCheckpoint(ckpt)).toBeNull();
    const ac = JSON.parse(readFileSync(join(ckpt, 'adapter', 'adapter_config.json'), 'utf8'));
    expect(ac).toMatchObject({ r: 4, lora_alpha: 8, base_model_name_or_path: model });
    expect([...ac.target_modules].sort()).toEqual(['q_proj', 'v_proj']);
    expect(existsSync(join(ckpt, 'adapter', 'adapter_model.safetensors'))).toBe(true);
    // The user-state store's dump went into the checkpoint, one record per user of the demo
    // states file (read independently here), in userId order, each at a version >= 1.
    const users = (file: string) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as { userId: string; latest?: number });
    const expected = [...new Set(users(join(REPO, 'data/demo/user_states.jsonl')).map((u) => u.userId))].sort();
    expect(expected.length).toBeGreaterThan(0);
    const dumped = users(join(ckpt, 'user_states.jsonl'));
    expect(dumped.map((u) => u.userId)).toEqual(expected);
    for (const u of dumped) expect(u.latest).toBeGreaterThanOrEqual(1);
  }, 180_000);
});
