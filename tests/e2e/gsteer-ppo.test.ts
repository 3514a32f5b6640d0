// E2E: PPO on the G-STEER environment (method §13): multi-turn constrained episodes, the
// trainer replaying each turn's grammar masks, GAE over a trajectory's turns, the critic.
// Tiny random model, embedded server and simulator, real Redis and workers; two updates.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyCheckpoint } from '../../checkpoints/checkpoint.ts';
import { cli, REPO, reproducibleMetrics, tempRun, writeConfig, removeRuns } from './helpers.ts';

const t = tempRun('gsteer-ppo');
afterAll(() => removeRuns(t));

describe('e2e: G-STEER with PPO', () => {
  it('trains two PPO updates on two-turn constrained episodes', async () => {
    const model = join(t.dir, 'tiny');
    const init = await cli(['model', 'init', '--preset', 'tiny', '--out', model, '--seed', '1'], { GSTEER_PARTS: 'real' }).done;
    expect(init.code, init.stderr).toBe(0);
    const cfg = {
      runName: 'gppo',
      runDir: join(t.dir, 'runs'),
      seed: 5,
      algorithm: 'ppo',
      data: { instances: [join(REPO, 'data/demo/instances.jsonl')] },
      policy: { server: 'embedded', model },
      rollout: { maxTurns: 2, maxTokens: 64, concurrency: 2 },
      ppo: { batchSize: 2, actorLearningRate: 1e-3, criticLearningRate: 1e-2 },
      grpo: { maxUpdates: 2, microBatchSize: 2, maxPolicyLag: 0 },
      lora: { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] },
      checkpoint: { every: 1, keep: 2 },
      queues: { prefix: t.prefix },
    };
    const x = await cli(['train', '--config', writeConfig(t.dir, cfg)], { GSTEER_PARTS: 'real' }).done;
    expect(x.code, x.stderr).toBe(0);
    const runDir = join(t.dir, 'runs', 'gppo');
    const metrics = reproducibleMetrics(runDir);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) {
      expect(m.trajectories).toBe(2); // one rollout per prompt (ppo.rolloutsPerPrompt), two prompts
      expect(m.invalid_rate).toBe(0); // constrained turns
      expect(m['constraint/replay_rejected']).toBe(0);
      // on-policy and the same masks: the actor's first ratio is 1
      expect(m.approx_kl as number).toBeLessThan(1e-5);
      for (const k of ['critic/vf_loss', 'critic/vf_explained_var', 'critic/returns/mean', 'actor/reward_kl_penalty', 'rewards/coverage/mean'])
        expect(typeof m[k], k).toBe('number');
    }
    const ckpt = join(runDir, 'checkpoints', 'step-000002');
    expect(verifyCheckpoint(ckpt)).toBeNull();
    expect(existsSync(join(ckpt, 'critic.value_head.json'))).toBe(true);
  }, 400_000);
});
