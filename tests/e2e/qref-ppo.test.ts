// E2E with the real parts on the QREF environment under PPO (method §13): a tiny random Qwen3
// (`gsteer model init`), the embedded policy server, QREF episodes over the demo corpus (BM25,
// rule filter; sampled under the refiner grammar), the PPO trainer (actor LoRA + critic LoRA and value head) through the real
// workers and Redis. Two updates, the first a critic warmup (ppo.criticWarmup 1, verl's
// trainer.critic_warmup: the actor stays where it started); then the newest checkpoint is removed and `gsteer resume`
// reruns update 2 from checkpoint 1: the actor adapter, the critic's LoRA and value head and
// its optimizer moments come out byte-identical, and so do the update's metrics.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyCheckpoint } from '../../checkpoints/checkpoint.ts';
import { toFloat32 } from '../../model/io/dtype.ts';
import { readSafetensors } from '../../model/io/safetensors.ts';
import { adapterBytes, cli, REPO, reproducibleMetrics, tempRun, writeConfig, removeRuns } from './helpers.ts';

const t = tempRun('qref-ppo');
afterAll(() => removeRuns(t));

const critic = (runDir: string, v: number) => {
  const dir = join(runDir, 'adapters', `policy-v${String(v).padStart(6, '0')}`);
  const opt = JSON.parse(readFileSync(join(dir, 'critic.optimizer.json'), 'utf8')) as { step: number; m: number[][]; v: number[][] };
  // the optimizer file also records tfjs's process-local variable names; the state is step, m, v
  return {
    lora: readFileSync(join(dir, 'critic.adapter_model.safetensors')),
    head: readFileSync(join(dir, 'critic.value_head.json'), 'utf8'),
    opt: { step: opt.step, m: opt.m, v: opt.v },
  };
};

describe('e2e: QREF with PPO', () => {
  it('trains two PPO updates on the QREF demo corpus and resumes byte-exact, critic included', async () => {
    const model = join(t.dir, 'tiny');
    const init = await cli(['model', 'init', '--preset', 'tiny', '--out', model, '--seed', '1'], { GSTEER_PARTS: 'real' }).done;
    expect(init.code, init.stderr).toBe(0);
    const cfg = {
      runName: 'qref',
      runDir: join(t.dir, 'runs'),
      seed: 5,
      env: 'qref',
      algorithm: 'ppo',
      qref: { data: { corpus: join(REPO, 'data/qref/demo/corpus.jsonl'), questions: join(REPO, 'data/qref/demo/questions.jsonl') } },
      policy: { server: 'embedded', model },
      rollout: { maxTokens: 32, concurrency: 2, constrained: true }, // under the refiner grammar; the trainer replays its masks
      ppo: { batchSize: 2, actorLearningRate: 1e-3, criticLearningRate: 1e-2, criticWarmup: 1 },
      grpo: { maxUpdates: 2, microBatchSize: 2, maxPolicyLag: 0 },
      lora: { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] },
      checkpoint: { every: 1, keep: 2 },
      queues: { prefix: t.prefix },
    };
    const x = await cli(['train', '--config', writeConfig(t.dir, cfg)], { GSTEER_PARTS: 'real' }).done;
    expect(x.code, x.stderr).toBe(0);
    const runDir = join(t.dir, 'runs', 'qref');
    const metrics = reproducibleMetrics(runDir);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) {
      expect(m.trajectories).toBe(2); // one rollout per prompt, two prompts per update
      expect(m['constraint/turns']).toBe(2);
      expect(m['constraint/replay_rejected']).toBe(0);
      if (m.step === 2) expect(m.approx_kl as number).toBeLessThan(1e-5); // scored under the sampling masks: the first ratio is 1
      for (const k of [
        'rewards/recall_refined/mean',
        'rewards/recall_original/mean',
        'rewards/query_cost/mean',
        'critic/vf_loss',
        'critic/vf_clipfrac',
        'critic/vf_explained_var',
        'critic/returns_var',
        'critic/residual_var',
        'critic/returns/mean',
        'actor/reward_kl_penalty',
      ])
        expect(typeof m[k], k).toBe('number');
      // the logged ratio is made of the two logged variances (verl's epsilon 1e-5)
      expect(m['critic/vf_explained_var'] as number).toBeCloseTo(1 - (m['critic/residual_var'] as number) / ((m['critic/returns_var'] as number) + 1e-5), 9);
    }
    // update 1 trained the critic alone: the actor is still a fresh LoRA (every lora_B zero); update 2 moved it
    expect(metrics.map((m) => m['actor/warmup'])).toEqual([1, 0]);
    const loraB = (v: number) =>
      [...readSafetensors(join(runDir, 'adapters', `policy-v${String(v).padStart(6, '0')}`, 'adapter_model.safetensors')).tensors]
        .filter(([k]) => k.includes('lora_B'))
        .flatMap(([k, t]) => [...toFloat32(t, k)]);
    expect(loraB(1).length).toBeGreaterThan(0);
    expect(loraB(1).every((x) => x === 0)).toBe(true);
    expect(loraB(2).some((x) => x !== 0)).toBe(true);
    expect(critic(runDir, 1).head).not.toBe(critic(runDir, 2).head);
    const ckpt = join(runDir, 'checkpoints', 'step-000002');
    expect(verifyCheckpoint(ckpt)).toBeNull();
    for (const f of ['critic.adapter_model.safetensors', 'critic.value_head.json', 'critic.optimizer.json', 'critic.reference.json'])
      expect(existsSync(join(ckpt, f)), f).toBe(true);

    const before = { actor: adapterBytes(runDir, 2), critic: critic(runDir, 2), metrics };
    rmSync(ckpt, { recursive: true });
    const r = await cli(['resume', runDir], { GSTEER_PARTS: 'real' }).done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/from checkpoint step 1/);
    expect(adapterBytes(runDir, 2).equals(before.actor)).toBe(true);
    const after = critic(runDir, 2);
    expect(after.lora.equals(before.critic.lora)).toBe(true);
    expect(after.head).toBe(before.critic.head);
    expect(after.opt).toEqual(before.critic.opt);
    // llm/* are left out: RUN_DIR/llm_calls.jsonl keeps the first run's records of the rerun
    // update's groups, so a resumed update counts its policy calls twice (workers/llm-calls.ts;
    // reported to the lead, not a PPO matter)
    const noCalls = (ms: typeof metrics) => ms.map((m) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('llm/'))));
    expect(noCalls(reproducibleMetrics(runDir))).toEqual(noCalls(before.metrics));
  }, 400_000);
});
