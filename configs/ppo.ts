// Config fragment for PPO with GAE and a critic (issue 23), to be mounted as `ppo:` in
// configs/schema.ts (`ppo: PpoSchema.prefault({})`). Defaults: the QREF paper
// where it gives a value (the QREF paper, method §13, RL settings: "batch size of 64", "actor and
// critic learning rates are 1e-6 and 1e-5", "one rollout per prompt", "one epoch", "KL
// regularization is applied through the reward, while an additional actor KL loss is
// disabled"), otherwise verl's ppo_trainer.yaml, the
// framework the paper trained with. Names follow verl (in comments).
import { z } from 'zod';

const positiveInt = z.number().int().positive();

export const KL_ESTIMATORS = ['k1', 'k3'] as const;
export type KlEstimator = (typeof KL_ESTIMATORS)[number];

export const PpoSchema = z
  .object({
    actorLearningRate: z.number().positive().default(1e-6), // paper (verl actor.optim.lr)
    criticLearningRate: z.number().positive().default(1e-5), // paper (verl critic.optim.lr)
    batchSize: positiveInt.default(64), // paper (verl data.train_batch_size)
    rolloutsPerPrompt: positiveInt.default(1), // paper (verl rollout.n)
    /** Passes over the training prompts under PPO (the schedule's pass count; grpo.passes is GRPO's). */
    epochs: positiveInt.default(1), // paper: "train for one epoch" (verl trainer.total_epochs)
    ppoEpochs: positiveInt.default(1), // verl actor.ppo_epochs: updates per batch
    /**
     * verl trainer.critic_warmup: the first this many updates train the critic only (the actor
     * stays the init adapter), so the actor's first advantages come from a critic that has seen
     * returns. 0 = none (verl's default; the paper gives no value).
     */
    criticWarmup: z.number().int().min(0).default(0),
    // The paper's 2,048-token prompt and response limits are not keys of their own: a turn's
    // response is capped by rollout.maxTokens (method §13.3).
    gamma: z.number().min(0).max(1).default(1.0), // verl algorithm.gamma (paper: GAE, no value)
    gaeLambda: z.number().min(0).max(1).default(1.0), // verl algorithm.lam (paper: GAE, no value)
    whitenAdvantages: z.boolean().default(true), // verl whitens GAE advantages over the response mask
    useKlInReward: z.boolean().default(true), // paper: KL through the reward (verl algorithm.use_kl_in_reward)
    klCoef: z.number().min(0).default(0.001), // verl algorithm.kl_ctrl.kl_coef (fixed controller; paper: no value)
    klEstimator: z.enum(KL_ESTIMATORS).default('k1'), // verl algorithm.kl_penalty "kl" = k1
    clipRatio: z.number().gt(0).lt(1).default(0.2), // verl actor.clip_ratio
    cliprangeValue: z.number().gt(0).default(0.5), // verl critic.cliprange_value
  })
  .strict();
export type PpoConfig = z.output<typeof PpoSchema>;
