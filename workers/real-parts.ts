// The real parts behind workers/parts.ts: the configured environment's episodes, reward and
// user state (rollout/env/: G-STEER or QREF, method §13), and the trainer/ LoRA step on the
// tfjs Qwen3 model. Modules load lazily so a rollout worker never imports tfjs.
import { readOptimizerFile, writeOptimizerFile } from '../trainer/optim/state-file.ts';
import { join } from 'node:path';
import { scheduleOf, type RunConfig } from '../configs/schema.ts';
import { environmentOf } from '../rollout/env/index.ts';
import { runCallSink } from '../endpoints/index.ts';
import type { TokenMasks } from '../model/token-masks.ts';
import { POLICY_GRAMMAR } from '../core/turn/grammar-ebnf.ts';
import type { Parts, TrainerPart, TrainSequence } from './parts.ts';

/**
 * method §5: one GRPO row per policy turn: prompt (masked) + completion (loss), A of its
 * trajectory; constrained turns carry the allowed sets they were sampled under.
 */
export function grpoRows(seqs: readonly TrainSequence[], offPolicy: boolean, masks: readonly (TokenMasks | null)[]) {
  const inputIds = seqs.map((s) => [...s.promptIds, ...s.completionIds]);
  const completionMask = seqs.map((s) => [...s.promptIds.map(() => 0), ...s.completionIds.map(() => 1)]);
  const rolloutLogprobs = seqs.map((s) => [...s.promptIds.map(() => 0), ...s.oldLogprobs]);
  return {
    kind: 'grpo' as const,
    inputIds,
    completionMask,
    advantages: seqs.map((s) => s.advantage),
    trajectories: seqs.map((s) => s.trajectory),
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
      readOptimizerFile(join(dir, 'optimizer.json'), optimizer);
    },
    async step(batch, step) {
      const replay = batch.some((s) => s.constraint) ? (pool ??= new ReplayPool()).start(batch, model) : null;
      let m: ReturnType<typeof trainStep>;
      let replayStats = NO_REPLAY_STATS;
      try {
        const rows = grpoRows(batch, cfg.grpo.maxPolicyLag > 0, replay?.masks ?? batch.map(() => null));
        // k3 KL against the base model (no adapter), scored under the same masks
        const ref = cfg.grpo.betaKl > 0 ? { refLogprobs: scoreRows(model, null, rows.inputIds, cfg.grpo.microBatchSize, rows.masks, cfg.grpo.prefixGrouping) } : {};
        m = trainStep(loraPolicy(model, adapter), optimizer, { ...rows, ...ref }, opts.grpoStepOptions(cfg, step - 1, totalSteps()));
        replayStats = replay?.stats() ?? NO_REPLAY_STATS;
      } finally {
        if (replay) pool!.release(replay);
      }
      const diagnostics = { ...Object.fromEntries(DIAGNOSTICS.filter((k) => m[k] !== undefined).map((k) => [k, m[k]!])), ...replayStats, 'train/nonfinite_skipped': m.nonfinite_skipped };
      return { loss: m.loss, clip_ratio: m['clip_ratio/region_mean'] ?? 0, grad_norm: m.grad_norm, entropy: m.entropy ?? 0, num_tokens: m.num_tokens, train_seconds: m.step_time_s, diagnostics };
    },
    async save(dir) {
      lora.savePeftAdapter(adapter, dir, cfg.policy.model);
      writeOptimizerFile(join(dir, 'optimizer.json'), optimizer);
    },
  };
}

/** `callsFile`: RUN_DIR/llm_calls.jsonl, where every LLM call of these parts is recorded (endpoints/call-group.ts). */
export async function realParts(cfg: RunConfig, runId: string, callsFile?: string): Promise<Parts> {
  const total = async () => {
    const { updateSchedule } = await import('./schedule.ts');
    return updateSchedule(env.load().instances, scheduleOf(cfg), cfg.seed).length; // the controller's plan
  };
  const env = await environmentOf(cfg, callsFile ? runCallSink(callsFile) : undefined); // method §13: the task's episode, reward and user state
  return {
    kind: 'real',
    rollout: () => env.rollout(runId),
    reward: () => env.reward(),
    users: () => env.users(runId),
    trainer: async () => {
      const n = await total();
      // method §13: PPO's actor + critic, or GRPO's LoRA step
      return cfg.algorithm === 'ppo' ? (await import('./ppo-trainer.ts')).ppoTrainerPart(cfg) : trainerPart(cfg, () => n);
    },
  };
}
