// The PPO trainer part (method §13; algorithm: ppo), in process: a Tinker engine has no critic, so
// PPO does not go through the contract (trainer.engine tinker refuses it at start). The actor is the
// policy LoRA, the critic a value head on its own LoRA over the same frozen base
// (trainer/ppo/critic.ts). One update:
//   1. replay the constraint masks (as GRPO), score the batch under the actor (log pi_old:
//      the current adapter on-policy, the server's logprobs with policy lag), the reference
//      (the SFT / init adapter; the base model without one) and the critic (V_old);
//   2. per-token rewards with the KL penalty to the reference, the trajectory's score on its
//      last token, GAE, whitened advantages, returns (trainer/ppo/batch.ts);
//   3. ppo.ppoEpochs times: a clipped-surrogate actor step (token-mean, no KL loss: the KL is in
//      the reward) at ppo.actorLearningRate and a clipped-value-loss critic step at
//      ppo.criticLearningRate, each with its own AdamW; during the first ppo.criticWarmup
//      updates (verl trainer.critic_warmup) the critic steps alone.
// A version dir holds the actor as PEFT files + optimizer.json (as GRPO), and the critic as
// critic.* files (LoRA, value head, optimizer, which reference it scores against), which the
// checkpoints carry with the optimizer state, so resume restores both.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunConfig } from '../../configs/schema.ts';
import type { PolicyGrammar } from '../../structured/constraint-spec.ts';
import type { TrainerPart, TrainSequence } from './part.ts';

const CRITIC_PREFIX = 'critic.';
const HEAD_FILE = `${CRITIC_PREFIX}value_head.json`;
const REFERENCE_FILE = `${CRITIC_PREFIX}reference.json`;
const CRITIC_OPTIMIZER = `${CRITIC_PREFIX}optimizer.json`;

/** Step metrics logged besides the fixed TrainStats fields (verl names). */
const ACTOR_DIAGNOSTICS = ['clip_ratio/low_mean', 'clip_ratio/high_mean', 'approx_kl'];

/** `grammars`: the environment's (Environment.grammars), which constrained turns' masks are replayed under. */
export async function ppoTrainerPart(cfg: RunConfig, grammars: readonly PolicyGrammar[]): Promise<TrainerPart> {
  const [
    { selectBackend },
    { loadModel },
    lora,
    { loraPolicy, scoreRows },
    opts,
    { trainStep },
    { replayTurnMasks },
    critics,
    { criticStep, scoreValues },
    { ppoTargets },
    state,
    { AdamW },
  ] = await Promise.all([
    import('../../model/backend.ts'),
    import('../../model/model.ts'),
    import('../../model/lora/index.ts'),
    import('../policy-lora.ts'),
    import('../step-options.ts'),
    import('../step.ts'),
    import('../../structured/turn-masks.ts'),
    import('../ppo/critic.ts'),
    import('../ppo/critic-step.ts'),
    import('../ppo/batch.ts'),
    import('../optim/state-file.ts'),
    import('../optim/adamw.ts'),
  ]);
  await selectBackend(cfg.trainer.backend);
  const model = await loadModel(cfg.policy.model);
  const p = cfg.ppo;
  let adapter = lora.createLora(model, cfg.lora, cfg.seed);
  let critic = critics.createCritic(model, cfg.lora, cfg.seed);
  let actorOpt = new AdamW(adapter.variables(), opts.grpoAdam(cfg));
  let criticOpt = new AdamW(critic.variables(), opts.grpoAdam(cfg));
  let reference: { path: string | null; adapter: ReturnType<typeof lora.createLora> | null } = { path: null, adapter: null };

  const useActor = (next: typeof adapter) => {
    actorOpt.dispose();
    adapter.dispose();
    adapter = next;
    actorOpt = new AdamW(adapter.variables(), opts.grpoAdam(cfg));
  };
  const useCritic = (next: typeof critic) => {
    criticOpt.dispose();
    critic.dispose();
    critic = next;
    criticOpt = new AdamW(critic.variables(), opts.grpoAdam(cfg));
  };
  const useReference = (path: string | null) => {
    reference.adapter?.dispose();
    reference = { path, adapter: path ? lora.loadPeftAdapter(path, model) : null };
  };
  /** The critic: its LoRA (critic.adapter_* files) and value head. */
  const loadCritic = (dir: string) => {
    const head = JSON.parse(readFileSync(join(dir, HEAD_FILE), 'utf8')) as { w: number[]; b: number };
    return critics.makeCritic(lora.loadPeftAdapter(dir, model, CRITIC_PREFIX), Float32Array.from(head.w), head.b);
  };

  return {
    async init(initAdapter) {
      if (initAdapter) useActor(lora.loadPeftAdapter(initAdapter, model));
      useReference(initAdapter); // the reference policy is the SFT adapter (paper), else the base model
    },
    async load(dir) {
      useActor(lora.loadPeftAdapter(dir, model));
      state.readOptimizerFile(join(dir, 'optimizer.json'), actorOpt);
      if (!existsSync(join(dir, HEAD_FILE)))
        throw new Error(`${dir}: no ${HEAD_FILE}; this adapter version was not written by the PPO trainer (algorithm: ppo), so its critic is missing`);
      useCritic(loadCritic(dir));
      state.readOptimizerFile(join(dir, CRITIC_OPTIMIZER), criticOpt);
      useReference((JSON.parse(readFileSync(join(dir, REFERENCE_FILE), 'utf8')) as { path: string | null }).path);
    },
    async step(batch: TrainSequence[], step) {
      const t0 = performance.now();
      const replay = await replayTurnMasks(batch, model, grammars);
      const inputIds = batch.map((s) => [...s.promptIds, ...s.completionIds]);
      const mask = batch.map((s) => [...s.promptIds.map(() => 0), ...s.completionIds.map(() => 1)]);
      const mb = cfg.grpo.microBatchSize;
      // log pi_old: the sampling policy. On-policy that is the current adapter (recomputed, as
      // verl); with policy lag the server's logprobs of the older version.
      const oldLogp =
        cfg.grpo.maxPolicyLag > 0 ? batch.map((s) => [...s.promptIds.map(() => 0), ...s.oldLogprobs]) : scoreRows(model, adapter, inputIds, mb, replay.masks);
      const refLogp = p.useKlInReward ? scoreRows(model, reference.adapter, inputIds, mb, replay.masks) : oldLogp;
      const values = scoreValues(model, critic, inputIds, mask, mb);
      // trajectories numbered densely in order of appearance; each one's reward
      const dense = new Map<number, number>();
      const scores: number[] = [];
      const seqs = batch.map((s, b) => {
        const key = s.trajectory ?? b;
        if (!dense.has(key)) dense.set(key, scores.length), scores.push(s.reward ?? 0);
        return { promptLength: s.promptIds.length, length: inputIds[b]!.length, trajectory: dense.get(key)! };
      });
      const targets = ppoTargets(seqs, oldLogp, refLogp, values, scores, {
        gamma: p.gamma,
        lambda: p.gaeLambda,
        whiten: p.whitenAdvantages,
        klCoef: p.useKlInReward ? p.klCoef : 0,
        klEstimator: p.klEstimator,
      });
      let actor: Awaited<ReturnType<typeof trainStep>> | null = null;
      let vf: ReturnType<typeof criticStep> | null = null;
      const warmup = step <= p.criticWarmup; // critic only: the actor stays where it started
      for (let e = 0; e < p.ppoEpochs; e++) {
        if (!warmup)
          actor = trainStep(
            loraPolicy(model, adapter),
            actorOpt,
            {
              kind: 'policy',
              inputIds,
              completionMask: mask,
              advantages: batch.map(() => 0),
              tokenAdvantages: targets.advantages,
              oldLogprobs: oldLogp,
              ...(replay.masks.some((m) => m) ? { masks: replay.masks } : {}),
            },
            {
              lr: p.actorLearningRate,
              microBatchSize: mb,
              maxGradNorm: cfg.grpo.maxGradNorm,
              recompute: cfg.grpo.gradientCheckpointing,
              dropoutSeed: (cfg.seed * 1_000_003 + (step - 1) * 7919 + e) >>> 0,
              withEntropy: true,
              grpo: { lossType: 'dapo', epsilon: p.clipRatio, betaKl: 0, tisCap: null }, // verl: token-mean, KL in the reward only
            },
          );
        vf = criticStep(
          model,
          critic,
          criticOpt,
          { inputIds, mask, oldValues: values, returns: targets.returns },
          {
            lr: p.criticLearningRate,
            microBatchSize: mb,
            maxGradNorm: cfg.grpo.maxGradNorm,
            cliprangeValue: p.cliprangeValue,
            recompute: cfg.grpo.gradientCheckpointing,
          },
        );
      }
      // a warmup update reports no actor step: zero loss and gradient over the batch's tokens
      const m: NonNullable<typeof actor> = actor ?? {
        loss: 0,
        grad_norm: 0,
        learning_rate: 0,
        num_tokens: inputIds.reduce((a, x) => a + x.length, 0),
        loss_tokens: 0,
        tokens_per_second: 0,
        step_time_s: 0,
        micro_batches: 0,
        nonfinite_skipped: 0,
      };
      const c = vf!;
      const t = targets.metrics;
      const diagnostics: Record<string, number> = {
        ...Object.fromEntries(ACTOR_DIAGNOSTICS.filter((k) => m[k] !== undefined).map((k) => [k, m[k]!])),
        ...replay.stats,
        'critic/vf_loss': c.vf_loss,
        'critic/vf_clipfrac': c.vf_clipfrac,
        'critic/grad_norm': c.grad_norm,
        'critic/vf_explained_var': t.vf_explained_var,
        'critic/returns_var': t.returns_var,
        'critic/residual_var': t.residual_var,
        'critic/returns/mean': t.returns_mean,
        'critic/returns/max': t.returns_max,
        'critic/returns/min': t.returns_min,
        'critic/values/mean': t.values_mean,
        'critic/values/max': t.values_max,
        'critic/values/min': t.values_min,
        'critic/advantages/mean': t.advantages_mean,
        'critic/advantages/max': t.advantages_max,
        'critic/advantages/min': t.advantages_min,
        'actor/reward_kl_penalty': t.kl_in_reward,
        'actor/reward_kl_penalty_coeff': t.kl_coef,
        'actor/warmup': warmup ? 1 : 0,
        // issue 32: a NaN / infinite loss or grad norm skipped the actor's or the critic's step
        'train/nonfinite_skipped': Math.max(m.nonfinite_skipped, c.nonfinite_skipped),
      };
      return {
        loss: m.loss,
        clip_ratio: m['clip_ratio/region_mean'] ?? 0,
        grad_norm: m.grad_norm,
        entropy: m.entropy ?? 0,
        num_tokens: m.num_tokens,
        train_seconds: (performance.now() - t0) / 1000,
        diagnostics,
      };
    },
    async save(dir) {
      lora.savePeftAdapter(adapter, dir, cfg.policy.model);
      state.writeOptimizerFile(join(dir, 'optimizer.json'), actorOpt);
      lora.savePeftAdapter(critic.adapter, dir, cfg.policy.model, undefined, CRITIC_PREFIX);
      writeFileSync(join(dir, HEAD_FILE), JSON.stringify({ w: Array.from(critic.w.dataSync()), b: critic.b.dataSync()[0] }));
      state.writeOptimizerFile(join(dir, CRITIC_OPTIMIZER), criticOpt);
      writeFileSync(join(dir, REFERENCE_FILE), JSON.stringify({ path: reference.path }));
    },
  };
}
