// The in-process trainer (trainer.engine: inprocess): the policy update as trainStep runs it on the
// tfjs Qwen3 + LoRA in the trainer worker's thread (method §5), no contract in between. The
// embedded engine behind `gsteer trainer serve` computes the same update through the Tinker
// contract (contract-part.ts); this one is the reference it is measured against (bench/trainer).
import { join } from 'node:path';
import type { RunConfig } from '../../configs/schema.ts';
import type { PolicyGrammar } from '../../structured/constraint-spec.ts';
import { readOptimizerFile, writeOptimizerFile } from '../optim/state-file.ts';
import type { TrainerPart } from './part.ts';
import { policyRows } from './sequences.ts';

/** Step metrics logged per update besides the fixed stats fields (TRL names). */
export const DIAGNOSTICS = [
  'clip_ratio/low_mean',
  'clip_ratio/high_mean',
  'approx_kl',
  'kl',
  'sampling/importance_sampling_ratio/mean',
  'sampling/logprob_diff/max',
];

/** `grammars`: the environment's (Environment.grammars), which constrained turns' masks are replayed under. */
export async function stepTrainerPart(cfg: RunConfig, totalSteps: () => number, grammars: readonly PolicyGrammar[]): Promise<TrainerPart> {
  const [{ selectBackend }, { loadModel }, lora, { loraPolicy, scoreRows }, opts, { trainStep }, { ReplayPool, NO_REPLAY_STATS }, { AdamW }] =
    await Promise.all([
      import('../../model/backend.ts'),
      import('../../model/model.ts'),
      import('../../model/lora/index.ts'),
      import('../policy-lora.ts'),
      import('../step-options.ts'),
      import('../step.ts'),
      import('../../structured/replay-pool.ts'),
      import('../optim/adamw.ts'),
    ]);
  await selectBackend(cfg.trainer.backend);
  const model = await loadModel(cfg.policy.model);
  // constrained turns' masks are replayed in worker threads while the step computes (issue 22),
  // their (first) grammar compiled while the first rollouts run
  let pool: InstanceType<typeof ReplayPool> | null = null;
  const first = grammars[0];
  if (cfg.rollout.constrained && first) (pool = new ReplayPool(grammars)).warm({ type: 'grammar', grammar: first.grammar, filter: first.filter }, model);
  let adapter = lora.createLora(model, cfg.lora, cfg.seed);
  let optimizer = new AdamW(adapter.variables(), opts.grpoAdam(cfg));
  const use = (next: typeof adapter) => {
    optimizer.dispose();
    adapter.dispose();
    adapter = next;
    optimizer = new AdamW(adapter.variables(), opts.grpoAdam(cfg));
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
      const replay = batch.some((s) => s.constraint) ? (pool ??= new ReplayPool(grammars)).start(batch, model) : null;
      let m: ReturnType<typeof trainStep>;
      let replayStats = NO_REPLAY_STATS;
      try {
        const rows = policyRows(batch, cfg.grpo.maxPolicyLag > 0, replay?.masks ?? batch.map(() => null));
        // k3 KL against the base model (no adapter), scored under the same masks
        const ref =
          cfg.grpo.betaKl > 0 ? { refLogprobs: scoreRows(model, null, rows.inputIds, cfg.grpo.microBatchSize, rows.masks, cfg.grpo.prefixGrouping) } : {};
        m = trainStep(loraPolicy(model, adapter), optimizer, { ...rows, ...ref }, opts.grpoStepOptions(cfg, step - 1, totalSteps()));
        replayStats = replay?.stats() ?? NO_REPLAY_STATS;
      } finally {
        if (replay) pool!.release(replay);
      }
      const diagnostics = {
        ...Object.fromEntries(DIAGNOSTICS.filter((k) => m[k] !== undefined).map((k) => [k, m[k]!])),
        ...replayStats,
        'train/nonfinite_skipped': m.nonfinite_skipped,
      };
      return {
        loss: m.loss,
        clip_ratio: m['clip_ratio/region_mean'] ?? 0,
        grad_norm: m.grad_norm,
        entropy: m.entropy ?? 0,
        num_tokens: m.num_tokens,
        train_seconds: m.step_time_s,
        diagnostics,
      };
    },
    async save(dir) {
      lora.savePeftAdapter(adapter, dir, cfg.policy.model);
      writeOptimizerFile(join(dir, 'optimizer.json'), optimizer);
    },
  };
}
