// The real parts behind workers/parts.ts: rollout/ episodes (policy client, simulator,
// Redis user-state store, Qwen3 tokenizer), reward/ with the configured encoder, the
// online user-state update with the configured judge, and the trainer/ LoRA step on the
// tfjs Qwen3 model. Modules load lazily so a rollout worker never imports tfjs.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunConfig } from '../configs/schema.ts';
import type { Instance } from '../data/schema.ts';
import type { Trajectory } from '../core/types.ts';
import type { TokenMasks } from '../model/token-masks.ts';
import { POLICY_GRAMMAR } from '../core/turn/grammar-ebnf.ts';
import type { CallSink } from '../endpoints/index.ts';
import { connect } from '../util/redis.ts';
import { runCallSink, withCallGroup } from './llm-calls.ts';
import type { Parts, RewardPart, RolloutPart, Scored, TrainerPart, TrainSequence, UserStatePart } from './parts.ts';

async function encoderOf(cfg: RunConfig, sink?: CallSink) {
  return (await import('../reward/encoders/index.ts')).createEncoder(cfg.encoder, sink);
}

async function rolloutPart(cfg: RunConfig, runId: string, sink?: CallSink): Promise<RolloutPart> {
  const [{ runEpisode }, fc, { qwen3Tokenizer }] = await Promise.all([import('../rollout/episode.ts'), import('../rollout/from-config.ts'), import('../core/tokenizer.ts')]);
  const encoder = await encoderOf(cfg, sink);
  const redis = connect(cfg.queues.redisUrl);
  const store = fc.userStoreFrom(cfg, redis, encoder, runId);
  const simulator = fc.simulatorFrom(cfg, encoder, sink);
  const tokenizer = qwen3Tokenizer();
  const clients = new Map<string, ReturnType<typeof fc.policyClientFrom>>();
  return {
    async run({ job, instance, policyUrl }) {
      let policy = clients.get(policyUrl);
      if (!policy) clients.set(policyUrl, (policy = fc.policyClientFrom(cfg, policyUrl, sink)));
      const deps = { policy, simulator, store, tokenizer };
      return await withCallGroup(job.groupId, () => runEpisode(deps, instance, {
        runId: job.runId, groupId: job.groupId, index: job.index, policyVersion: job.policyVersion, model: job.model,
        snapshotId: job.snapshotId, seed: job.seed, rollout: cfg.rollout,
      }));
    },
    async close() {
      redis.disconnect();
    },
  };
}

/** The reward's numeric fields are its components (method §4: each reported separately). */
async function rewardPart(cfg: RunConfig, sink?: CallSink): Promise<RewardPart> {
  const { computeReward, rewardInputFromTrajectory } = await import('../reward/index.ts');
  const encoder = await encoderOf(cfg, sink);
  return {
    async score(traj: Trajectory, instance: Instance): Promise<Scored> {
      const b = await withCallGroup(traj.groupId, () => computeReward(rewardInputFromTrajectory(traj, instance), cfg.reward, encoder));
      const components: Record<string, number> = {};
      for (const [k, v] of Object.entries(b)) if (typeof v === 'number' && k !== 'reward') components[k] = v;
      return { reward: b.reward, components };
    },
  };
}

async function usersPart(cfg: RunConfig, runId: string, sink?: CallSink): Promise<UserStatePart> {
  const [fc, { updateUserState }, { snapshotId }] = await Promise.all([import('../rollout/from-config.ts'), import('../rollout/state-update.ts'), import('../rollout/user-store.ts')]);
  const encoder = await encoderOf(cfg, sink);
  const redis = connect(cfg.queues.redisUrl);
  const store = fc.userStoreFrom(cfg, redis, encoder, runId);
  const judge = fc.judgeFrom(cfg, encoder, sink);
  return {
    snapshot: async (userId) => snapshotId(userId, await store.latestVersion(userId)),
    version: (userId) => store.latestVersion(userId),
    async applyBest(group, instance) {
      const run = () => updateUserState({ store, judge }, instance, group);
      await (group[0] ? withCallGroup(group[0].trajectory.groupId, run) : run());
    },
    async init(states) {
      await store.clear();
      await store.init(states);
    },
    dump: async () => (await store.dump()).users,
    restore: async (records) => store.restore({ format: 'gsteer-user-store', v: 1, users: records as never }),
    async close() {
      redis.disconnect();
    },
  };
}

/**
 * method §5: one GRPO row per policy turn: prompt (masked) + completion (loss), A of its
 * trajectory; constrained turns carry the allowed sets they were sampled under.
 */
function grpoRows(seqs: readonly TrainSequence[], offPolicy: boolean, masks: readonly (TokenMasks | null)[]) {
  const inputIds = seqs.map((s) => [...s.promptIds, ...s.completionIds]);
  const completionMask = seqs.map((s) => [...s.promptIds.map(() => 0), ...s.completionIds.map(() => 1)]);
  const rolloutLogprobs = seqs.map((s) => [...s.promptIds.map(() => 0), ...s.oldLogprobs]);
  return {
    kind: 'grpo' as const,
    inputIds,
    completionMask,
    advantages: seqs.map((s) => s.advantage),
    rolloutLogprobs,
    // With policy lag the sampling policy is an older adapter: its (server) logprobs are pi_old.
    // On-policy, pi_old is the current policy detached (trainer/step-loss.ts).
    ...(offPolicy ? { oldLogprobs: rolloutLogprobs } : {}),
    // masks may still be arriving (trainer/replay-pool.ts): decide by the turns, not by reading them
    ...(seqs.some((s) => s.constraint) ? { masks } : {}),
  };
}

/** Step metrics logged per update besides the fixed TrainStats fields (TRL names). */
const DIAGNOSTICS = ['clip_ratio/low_mean', 'clip_ratio/high_mean', 'approx_kl', 'kl', 'sampling/importance_sampling_ratio/mean', 'sampling/logprob_diff/max'];

async function trainerPart(cfg: RunConfig, totalSteps: () => number): Promise<TrainerPart> {
  const [{ selectBackend }, { loadModel }, lora, { loraPolicy, scoreRows }, opts, { trainStep }, { ReplayPool, NO_REPLAY_STATS }] = await Promise.all([
    import('../model/backend.ts'), import('../model/model.ts'), import('../model/lora/index.ts'),
    import('../trainer/policy-lora.ts'), import('../trainer/step-options.ts'), import('../trainer/step.ts'), import('../trainer/replay-pool.ts'),
  ]);
  await selectBackend(cfg.trainer.backend);
  const model = await loadModel(cfg.policy.model);
  // constrained turns' masks are replayed in worker threads while the step computes (issue 22),
  // their grammar compiled while the first rollouts run
  let pool: InstanceType<typeof ReplayPool> | null = null;
  if (cfg.rollout.constrained) (pool = new ReplayPool()).warm({ type: 'grammar', grammar: POLICY_GRAMMAR, filter: 'policy_turn' }, model);
  let adapter = lora.createLora(model, cfg.lora, cfg.seed);
  let optimizer = opts.grpoOptimizer(cfg, adapter.variables());
  const use = (next: typeof adapter) => {
    optimizer.dispose();
    adapter.dispose();
    adapter = next;
    optimizer = opts.grpoOptimizer(cfg, adapter.variables());
  };
  return {
    async init(initAdapter) {
      if (initAdapter) use(lora.loadPeftAdapter(initAdapter, model));
    },
    async load(dir) {
      use(lora.loadPeftAdapter(dir, model));
      const s = JSON.parse(readFileSync(join(dir, 'optimizer.json'), 'utf8')) as { step: number; names: string[]; shapes: number[][]; m: number[][]; v: number[][] };
      optimizer.load({ ...s, m: s.m.map((x) => Float32Array.from(x)), v: s.v.map((x) => Float32Array.from(x)) });
    },
    async step(batch, step) {
      const replay = batch.some((s) => s.constraint) ? (pool ??= new ReplayPool()).start(batch, model) : null;
      let m: ReturnType<typeof trainStep>;
      let replayStats = NO_REPLAY_STATS;
      try {
        const rows = grpoRows(batch, cfg.grpo.maxPolicyLag > 0, replay?.masks ?? batch.map(() => null));
        // k3 KL against the base model (no adapter), scored under the same masks
        const ref = cfg.grpo.betaKl > 0 ? { refLogprobs: scoreRows(model, null, rows.inputIds, cfg.grpo.microBatchSize, rows.masks) } : {};
        m = trainStep(loraPolicy(model, adapter), optimizer, { ...rows, ...ref }, opts.grpoStepOptions(cfg, step - 1, totalSteps()));
        replayStats = replay?.stats() ?? NO_REPLAY_STATS;
      } finally {
        if (replay) pool!.release(replay);
      }
      const diagnostics = { ...Object.fromEntries(DIAGNOSTICS.filter((k) => m[k] !== undefined).map((k) => [k, m[k]!])), ...replayStats };
      return { loss: m.loss, clip_ratio: m['clip_ratio/region_mean'] ?? 0, grad_norm: m.grad_norm, entropy: m.entropy ?? 0, num_tokens: m.num_tokens, train_seconds: m.step_time_s, diagnostics };
    },
    async save(dir) {
      lora.savePeftAdapter(adapter, dir, cfg.policy.model);
      const s = optimizer.state();
      // a plain write: `dir` is the temp folder writeRunDir (util/atomic.ts writeDirAtomic) renames whole
      writeFileSync(join(dir, 'optimizer.json'), JSON.stringify({ ...s, m: s.m.map((x) => Array.from(x)), v: s.v.map((x) => Array.from(x)) }));
    },
  };
}

/** `callsFile`: RUN_DIR/llm_calls.jsonl, where every LLM call of these parts is recorded (workers/llm-calls.ts). */
export async function realParts(cfg: RunConfig, runId: string, callsFile?: string): Promise<Parts> {
  const sink = callsFile ? runCallSink(callsFile) : undefined;
  const total = async () => {
    const { loadInstances } = await import('../data/load.ts');
    const { trainInstances, updateCount } = await import('./schedule.ts');
    return updateCount(trainInstances(loadInstances(cfg.data.instances), cfg.grpo).length, cfg.grpo); // the controller's plan length
  };
  return {
    kind: 'real',
    rollout: () => rolloutPart(cfg, runId, sink),
    reward: () => rewardPart(cfg, sink),
    users: () => usersPart(cfg, runId, sink),
    trainer: async () => {
      const n = await total();
      return trainerPart(cfg, () => n);
    },
  };
}
