// The one run config (one zod schema, the single source of settings). `RunConfigInput` is what users write (every field
// optional); `RunConfig` is the resolved shape the code reads. Defaults are the paper's
// (the G-STEER paper's Implementation Details; the docs/method.md sections, cited as method §n, named per field).
// YAML files in configs/ hold overrides only; `--set a.b=c` overrides on the command line.
import { z } from 'zod';
import { ExternalBaselinesSchema } from './baselines.ts';
import { DownstreamSchema } from './downstream.ts';
import { chatFields, checkEndpointSections, endpointSection } from './endpoint-section.ts';
import { PpoSchema } from './ppo.ts';
import { DemoSchema } from './demo-settings.ts';
import { QrefSchema, REFINER_MIN_TOKENS } from './qref.ts';
import { isClusterUrl } from '../util/redis-keys.ts';

/**
 * The fewest max_tokens a constrained policy turn fits in: the shortest turn the policy grammar
 * and its caps allow ("STATE:\nPLAN:x\nACTION:ASK\nEXECUTE:x", 34) and EOS. The policy_turn
 * filter computes the same (structured/turn/caps.ts policyMinTokens; a test keeps the two equal).
 */
export const POLICY_MIN_TOKENS = 35;
const positiveInt = z.number().int().positive();

/** method §9: the policy is served by an OpenAI-compatible server (vLLM or `gsteer serve`). */
export const PolicySchema = endpointSection({
  /** `embedded`: gsteer starts `serve/` over `model` (a Hugging Face folder: config.json + *.safetensors, also the trainer's); `external`: `baseUrl` as is. */
  kinds: ['embedded', 'external'],
  kindKey: 'server',
  urlHint: 'an OpenAI-compatible /v1 URL (e.g. http://127.0.0.1:8000/v1)',
  model: 'models/tiny',
  apiKeyEnv: 'GSTEER_POLICY_API_KEY',
  timeoutMs: 120_000,
  concurrency: 64, // policy requests in flight per rollout process
  fields: {
    /** Port the embedded server listens on (0 = any free port). */
    port: z.number().int().min(0).max(65535).default(0),
    maxResponseMb: chatFields.maxResponseMb,
  },
});

/** method §3: LLM-backed simulator in real runs (Qwen3-32B in the paper), embedded seed-grounded one otherwise. */
export const SimulatorSchema = endpointSection({
  kinds: ['embedded', 'llm'],
  model: 'Qwen/Qwen3-32B',
  apiKeyEnv: 'GSTEER_SIMULATOR_API_KEY',
  timeoutMs: 60_000,
  concurrency: 8,
  chat: true,
  fields: {
    /** Embedded simulator: cosine the best target must clear to answer with its seed answer. */
    answerThreshold: z.number().min(-1).max(1).default(0.35),
    // ---- issue 33 (h-paper) ----
    /** method §3.5: a retrieved memory covers a target (and so activates its late children) at this cosine (paper's coverage threshold 0.55). */
    memoryThreshold: z.number().min(-1).max(1).default(0.55),
    // ---- end issue 33 ----
    // paper, "User Simulator": temperature 0.7, top-p 1.0, at most 768 new tokens
    temperature: z.number().min(0).max(2).default(0.7),
    topP: z.number().gt(0).max(1).default(1.0),
    maxTokens: positiveInt.default(768),
  },
});

/** method §9: phi = all-mpnet-base-v2 in the paper; three implementations behind one interface (http: OpenAI-compatible /v1/embeddings). */
export const EncoderSchema = endpointSection({
  kinds: ['embedded', 'onnx', 'http'],
  remote: ['http'],
  model: 'sentence-transformers/all-mpnet-base-v2',
  apiKeyEnv: 'GSTEER_ENCODER_API_KEY',
  timeoutMs: 30_000,
  concurrency: 8,
  fields: {
    /** onnx: folder with model.onnx + tokenizer.json (sentence-transformers export). */
    path: z.string().optional(),
    /** embedded: dimension of the hashed n-gram space. */
    dim: positiveInt.default(512),
    batchSize: positiveInt.default(64),
    /** Texts whose embeddings are kept in an LRU cache (targets and slot names repeat across a group); 0 = off. */
    cacheSize: z.number().int().min(0).default(10_000),
  },
});

/** method §6: memory judge; method §7 teacher. */
export const JudgeSchema = endpointSection({
  kinds: ['rule', 'llm'],
  model: 'Qwen/Qwen3-32B',
  apiKeyEnv: 'GSTEER_JUDGE_API_KEY',
  timeoutMs: 60_000,
  concurrency: 8,
  chat: true,
  fields: {
    temperature: z.number().min(0).max(2).default(0), // not in the paper: a judge decides, it does not sample
    maxTokens: positiveInt.default(768),
  },
});

/** method §8: the factor extractor, an LLM in real runs (paper: gpt-5.4-2026-03-05), a documented rule-based one embedded. */
export const ExtractorSchema = endpointSection({
  kinds: ['rule', 'llm'],
  model: 'gpt-5.4-2026-03-05',
  apiKeyEnv: 'GSTEER_EXTRACTOR_API_KEY',
  timeoutMs: 60_000,
  concurrency: 8,
  chat: true,
  fields: { maxTokens: positiveInt.default(1024) },
});

/** method §3 and §5 (paper: group 4, temperature 0.7, top-p 0.95). */
export const RolloutSchema = z
  .object({
    groupSize: z.number().int().min(2).default(4), // method §5: G = 4
    temperature: z.number().min(0).max(2).default(0.7), // paper: rollout temperature 0.7
    topP: z.number().gt(0).max(1).default(0.95), // paper: top-p 0.95
    maxTurns: positiveInt.default(12), // method §3: default 12
    maxTokens: positiveInt.default(384), // per policy turn; long enough for state + plan + action
    /**
     * Sample every policy turn under the policy grammar (structured/turn/grammar.ebnf, sent as vLLM's
     * `structured_outputs.grammar`), and score each constrained token under the same mask in
     * the trainer. A departure from the paper, which samples unconstrained and penalizes
     * malformed turns (configs/paper.yaml sets false); the invalid penalty stays for
     * unconstrained runs and for what only parseTurn checks (a repeated slot name under vLLM).
     */
    constrained: z.boolean().default(true),
    retrieveCandidates: positiveInt.default(15), // method §2: Retrieve examines up to 15
    retrieveTopK: positiveInt.default(3), // method §2: returns at most 3
    /** How Retrieve pre-selects its candidates: embedding cosine (paper: FAISS memory index) or content-word overlap (rollout/retrieval.ts). */
    retrievePreselect: z.enum(['embedding', 'lexical']).default('embedding'),
    workers: positiveInt.default(1), // rollout worker processes `gsteer train` starts
    concurrency: positiveInt.default(4), // episodes in flight per rollout worker
  })
  .strict();

/** method §4 (paper defaults). */
export const RewardSchema = z
  .object({
    alpha: z.number().min(0).default(1.0),
    beta: z.number().min(0).default(0.3),
    lambdaAsk: z.number().min(0).default(0.04),
    lambdaRet: z.number().min(0).default(0.01),
    lambdaRep: z.number().min(0).default(0.08),
    lambdaMulti: z.number().min(0).default(0.08),
    repetitionThreshold: z.number().min(-1).max(1).default(0.86), // method §4: cosine >= 0.86
    invalidPenalty: z.number().min(0).default(1.0),
    nonStopPenalty: z.number().min(0).default(0.2),
    /** method §4: uniform (1/N) or rubric-weighted (sum w_i s_i / sum w_i) coverage. */
    coverageWeighting: z.enum(['uniform', 'rubric']).default('uniform'),
  })
  .strict();

/** method §5 (paper: lr 1e-6, AdamW wd 0.01, clip 0.2, no KL, 2 passes, seed 42). TRL names in comments. */
export const GrpoSchema = z
  .object({
    /** TRL `scale_rewards`: group std (paper), batch std, or none (Dr. GRPO). */
    advantageScaling: z.enum(['group', 'batch', 'none']).default('group'),
    advantageEps: z.number().positive().default(1e-4), // eps in (R - mean) / (std + eps)
    epsilon: z.number().positive().default(0.2), // TRL `epsilon`: clip 0.2 (paper)
    epsilonHigh: z.number().positive().optional(), // TRL `epsilon_high`; defaults to epsilon
    /** TRL `loss_type`: grpo = sequence mean, bnpo/dapo = token mean over the batch, dr_grpo = constant. */
    lossType: z.enum(['grpo', 'bnpo', 'dapo', 'dr_grpo']).default('grpo'),
    /** method §5.5: the unit of the loss: a trajectory (all its turns' policy tokens; the paper's trajectory-level GRPO) or each turn. */
    lossAggregation: z.enum(['trajectory', 'turn']).default('trajectory'),
    betaKl: z.number().min(0).default(0), // TRL `beta`: 0 (paper), k3 estimator when > 0
    /** Truncated importance sampling cap for server/trainer mismatch (null = off). */
    tisCap: z.number().positive().nullable().default(null),
    learningRate: z.number().positive().default(1e-6), // paper
    weightDecay: z.number().min(0).default(0.01), // paper: AdamW weight decay 0.01
    adamBeta1: z.number().min(0).lt(1).default(0.9),
    adamBeta2: z.number().min(0).lt(1).default(0.999),
    adamEps: z.number().positive().default(1e-8),
    maxGradNorm: z.number().positive().default(1.0), // TRL default
    lrSchedule: z.enum(['constant', 'cosine']).default('constant'),
    warmupSteps: z.number().int().min(0).default(0),
    passes: positiveInt.default(2), // paper: 2 passes over the training instances
    groupsPerUpdate: positiveInt.default(1), // paper: one group per update (105 x 2 = 210 updates)
    /** Train on these train-split instance ids only (a subset, like `dataset.select`); default every train instance. */
    trainIds: z.array(z.string().min(1)).min(1).optional(),
    maxUpdates: positiveInt.optional(), // stop early (demo, smoke runs)
    microBatchSize: positiveInt.default(4), // sequences per forward/backward; accumulated to one update
    gradientCheckpointing: z.boolean().default(false),
    /** method §5.11: prefixes shared by a micro-batch's sequences computed once (same loss and gradients within 1e-5). */
    prefixGrouping: z.boolean().default(true),
    maxPolicyLag: z.number().int().min(0).default(0), // 0 = the paper's on-policy loop
    /**
     * method §5.12 (departure; null = the paper: an update waits for every group): a group whose
     * episodes are not all finished this long after the first group of its update finished is
     * dropped (groups_late), its unfinished episodes cancelled, and the update trains on the others.
     */
    groupDeadlineMs: positiveInt.nullable().default(null),
    /**
     * User states (JSONL) GRPO starts from; absent: every user starts empty, the paper's
     * protocol ("GRPO begins with empty memory and profile states"). The dataset's offline
     * states (data.userStates) are never read by GRPO.
     */
    initialUserStates: z.string().optional(),
  })
  .strict();

/** method §5: LoRA rank 8, alpha 16, dropout 0.05 on all projections (PEFT names). */
export const LoraSchema = z
  .object({
    r: positiveInt.default(8),
    alpha: z.number().positive().default(16),
    dropout: z.number().min(0).lt(1).default(0.05),
    targetModules: z
      .array(z.enum(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']))
      .min(1)
      .default(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']),
  })
  .strict();

/** method §9.7, §14.1: `auto` prefers gpu > node > wasm > cpu, whichever is installed. method §5.13: the engine. */
export const TrainerSchema = z
  .object({
    backend: z.enum(['auto', 'gpu', 'node', 'wasm', 'cpu']).default('auto'),
    /**
     * Who computes the LoRA update (method §5.13): `embedded`, gsteer's tfjs engine behind its
     * Tinker API (`gsteer trainer serve`, started and stopped by gsteer, over HTTP); `inprocess`,
     * the same update by the train step in the trainer worker's thread, no contract; `tinker`, a
     * remote Tinker-compatible engine (hosted Tinker, SkyRL, VeRL-Tinker) at trainer.baseUrl.
     * PPO trains in process under embedded (its critic has no place in the contract).
     */
    engine: z.enum(['embedded', 'inprocess', 'tinker']).default('embedded'),
    /** engine tinker: the engine's URL (the SDK's base_url, e.g. https://tinker.thinkingmachines.dev/services/tinker-prod). */
    baseUrl: z.string().url().optional(),
    /** engine tinker: the environment variable holding the API key (never written anywhere). */
    apiKeyEnv: z.string().min(1).default('TINKER_API_KEY'),
    /** engine tinker: the engine's name of the base model (e.g. Qwen/Qwen3-8B); embedded: policy.model. */
    baseModel: z.string().min(1).optional(),
    /** engine embedded: the service's port (0 = a free one). */
    port: z.number().int().min(0).max(65535).default(0),
    /**
     * The stale-adapter check (method §5.13; embedded and tinker engines): each `every` updates, up
     * to `turns` turns of the newest sampling version scored under that adapter, the one before and
     * the base; 0 turns = off.
     */
    samplerCheck: z
      .object({ turns: z.number().int().min(0).default(2), every: positiveInt.default(1) })
      .strict()
      .prefault({}),
    // ---- issue 33 (h-paper) ----
    /**
     * The GPU the trainer runs on (backend gpu): a name of trainer/plan.ts GPUS (A100-40GB,
     * A100-80GB, H100-80GB). `gsteer train` refuses at start, with the memory plan, a config that
     * does not fit it (trainer/plan-config.ts); wasm / cpu / node are checked against their own memory.
     */
    device: z.string().min(1).optional(),
    // ---- end issue 33 ----
  })
  .strict();

/** method §7: SFT on graph-scaffolded trajectories. */
export const SftSchema = z
  .object({
    enabled: z.boolean().default(false),
    examples: z.string().optional(), // JSONL from `gsteer sft build`; built from data.train when absent
    optionalRatios: z.array(z.number().min(0).max(1)).default([0, 0.5, 1.0]), // method §7
    // method §7 scenario knobs (data/sft/README.md), at paper scale: on data/demo these give
    // 302 trajectories / 2,155 steps per training instance (paper: 31,081 / 105 = 296 and 1,755).
    ordersPerSubgraph: positiveInt.default(3),
    memorySamples: positiveInt.default(8), // memory-hit samples per order (memory_mixed, early_stop)
    stopPoints: positiveInt.default(3), // stopping points per early_stop sample
    lateActivation: z.enum(['graph', 'vary']).default('vary'), // vary: also each scenario with late targets active from the start
    /** Target schedules: `ieg` (method §7) or `random`, the paper's Table 3 ablation (random orders; acquisitions ignore the IEG). */
    order: z.enum(['ieg', 'random']).default('ieg'),
    learningRate: z.number().positive().default(2e-4), // paper Table 6: SFT lr 2e-4
    weightDecay: z.number().min(0).default(0), // paper Table 6: AdamW weight decay 0.0 for SFT
    epochs: positiveInt.default(2), // paper Table 6: 2 epochs
    maxSteps: positiveInt.optional(),
    batchSize: positiveInt.default(64), // paper Table 6: 64 examples per update
    microBatchSize: positiveInt.default(4), // sequences per forward/backward (memory bound, not in the paper)
    heldOutFraction: z.number().min(0).lt(1).default(0.1),
    evalEvery: positiveInt.default(50), // updates between held-out loss evaluations (and at the end)
    evalMaxExamples: positiveInt.default(256), // held-out examples scored per evaluation (the first N, fixed)
    evalTurns: z.number().int().min(0).default(16), // held-out turns sampled after SFT for the valid-turn rate (0 = skip; above the held-out count, each prompt is sampled again)
    maxSeqLen: positiveInt.default(1024),
    // ---- issue 33 (h-paper) ----
    /**
     * method §7.8: an example over maxSeqLen (Qwen3 tokens) keeps its target whole and loses its
     * oldest history entries until it fits (`trim`), or is left out (`drop`); one that does not fit
     * even with no history is left out either way. Every case is counted per action and printed.
     */
    overBudget: z.enum(['trim', 'drop']).default('trim'),
    // ---- end issue 33 ----
  })
  .strict();

/** method §8: intrinsic evaluation (eval/; paper "Evaluation" and "Rollout and Factor Extraction"). */
export const EvalSchema = z
  .object({
    threshold: z.number().min(-1).max(1).default(0.55), // method §8: covered when best cosine >= 0.55
    sweep: z.array(z.number().min(-1).max(1)).min(1).default([0.45, 0.5, 0.55, 0.6, 0.65, 0.7]), // paper Table 9: 0.45..0.70
    temperature: z.number().min(0).max(2).default(0.7), // paper: test-time temperature 0.7
    topP: z.number().gt(0).max(1).default(1.0), // paper: test-time top-p 1.0
    maxTokens: positiveInt.default(1024), // paper: at most 1024 new agent tokens (per policy call here)
    concurrency: positiveInt.default(4), // episodes in flight (not from the paper)
    episodesPerInstance: positiveInt.default(1), // paper: one episode per test instance; more, each with its own seed, for spread
    /** Standard errors and percentile intervals of the pooled metrics (eval/bootstrap.ts); not in the paper, which reports none. */
    bootstrap: z
      .object({
        samples: positiveInt.default(1000), // B: resamples of the instances (Efron & Tibshirani: 200+ for an SE, 1000+ for percentiles)
        level: z.number().gt(0).lt(1).default(0.95), // the percentile interval's coverage
      })
      .strict()
      .prefault({}),
    extractor: ExtractorSchema.prefault({}),
    /** `gsteer eval downstream` (method §12; configs/downstream.ts). */
    downstream: DownstreamSchema.prefault({}),
    // ---- issue 33 (h-paper) ----
    /** The released-checkpoint baselines (Mistral-Interact, CEP-Clarify+Rewrite; method §8.5; configs/baselines.ts). */
    baselines: ExternalBaselinesSchema.prefault({}),
    // ---- end issue 33 ----
  })
  .strict();

const RunConfigObject = z
  .object({
    runName: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-" only')
      .refine((n) => !/^\.+$/.test(n), 'a run name made of dots only ("." or "..") would put the run outside runDir; pick a name such as run-1')
      .default('gsteer'),
    /** Run directory root; the run lives in `${runDir}/${runName}` (layout in README). */
    runDir: z.string().default('runs'),
    seed: z.number().int().default(42), // paper: seed 42
    /**
     * What is trained: `gsteer` (Retrieve / Ask / Stop with evidence slots) or `clarifier`, the
     * IntentRL-style Ask/Stop baseline trained the same way (IEG-scaffolded SFT, GRPO): empty
     * STATE, its own menu grammar, no profile or memory, q* written from the dialogue alone.
     */
    variant: z.enum(['gsteer', 'clarifier']).default('gsteer'),
    /** The task the policy is trained on (rollout/env/, method §13.1): G-STEER's clarification loop or the QREF refiner (issue 23). */
    env: z.enum(['gsteer', 'qref']).default('gsteer'),
    /** grpo: group-normalized advantages (method §5); ppo: GAE with a critic (method §13, configs/ppo.ts). */
    algorithm: z.enum(['grpo', 'ppo']).default('grpo'),
    data: z
      .object({
        instances: z.array(z.string()).min(1).default(['data/demo/instances.jsonl']),
        /** The dataset's offline user states (gsteer data stats, the SFT stage's data); GRPO starts from grpo.initialUserStates instead. */
        userStates: z.string().optional().default('data/demo/user_states.jsonl'),
      })
      .strict()
      .prefault({}),
    policy: PolicySchema.prefault({}),
    simulator: SimulatorSchema.prefault({}),
    encoder: EncoderSchema.prefault({}),
    judge: JudgeSchema.prefault({}),
    rollout: RolloutSchema.prefault({}),
    reward: RewardSchema.prefault({}),
    grpo: GrpoSchema.prefault({}),
    lora: LoraSchema.prefault({}),
    trainer: TrainerSchema.prefault({}),
    sft: SftSchema.prefault({}),
    eval: EvalSchema.prefault({}),
    qref: QrefSchema.prefault({}),
    ppo: PpoSchema.prefault({}),
    demo: DemoSchema.prefault({}),
    queues: z
      .object({
        /** A Redis URL; `?cluster=true` names one node of a Redis Cluster (the client finds the others). */
        redisUrl: z
          .string()
          .regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL')
          .default('redis://127.0.0.1:6379'),
        /** BullMQ prefix; a run's keys go under `<prefix>:{<runId>}` (a Redis Cluster hash tag per run: workers/README.md). */
        prefix: z.string().min(1).default('gsteer'),
        // Orchestration knobs (workers/; not from the paper). Attempts/backoff: bounded retries
        // bounded retries; after the last attempt a rollout's group is dropped and logged.
        attempts: positiveInt.default(3),
        backoffMs: positiveInt.default(1000), // exponential: 1 s, 2 s, 4 s ...
        /** Rollout job lock; a killed worker's job is retried once it expires (BullMQ stalled check). */
        rolloutLockMs: positiveInt.default(60_000),
        /**
         * Trainer job lock, renewed every half of it while the step runs (tfjs computes in a worker
         * thread, workers/trainer-thread.ts); a trainer that dies gives its update back at once (workers/reclaim.ts).
         */
        trainerLockMs: positiveInt.default(30_000),
        /** A dead worker's active jobs go back to the queue at once (off: they wait for their lock to expire, as before issue 22). */
        reclaim: z.boolean().default(true),
        /** How often the controller polls job states (ms). */
        pollMs: positiveInt.default(200),
      })
      .strict()
      .prefault({}),
    // Orchestration shortcuts (workers/; not from the paper): each on by default and each
    // switchable, so bench/orchestrator/ measures a run with and without it in one invocation.
    orchestrator: z
      .object({
        /** The controller wakes on BullMQ job events (QueueEvents); off: it polls every queues.pollMs only. */
        events: z.boolean().default(true),
        /**
         * Update s + 1 is admitted before the group stage of s is done when none of its users is
         * in s, and before update s - 1 - lag is recorded; off: strictly after both.
         */
        earlyAdmission: z.boolean().default(true),
        /** A finished group stage starts the next (delayed) one at once; off: it waits out queues.pollMs. */
        promoteGroups: z.boolean().default(true),
        /** fsync per-update files (trajectories, group files, user-state dumps, adapter versions); off: checkpoints are the durable copy. */
        fsyncRunFiles: z.boolean().default(false),
        /** BullMQ workers per rollout worker process fetching jobs in parallel (capped by rollout.concurrency). */
        rolloutFetchers: z.number().int().min(1).max(8).default(8),
        /**
         * Group stages watched at a cost independent of the groups per update: the controller reads
         * group states in stage order up to the first unfinished one, and a group waiting for its
         * predecessor sleeps 2 s unless promoted; off: every open group's state each turn and pollMs waits.
         */
        sparseGroupPolls: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
    checkpoint: z
      .object({
        every: positiveInt.default(10), // updates between checkpoints
        keep: positiveInt.default(3), // newest checkpoints kept on disk
      })
      .strict()
      .prefault({}),
    initAdapter: z.string().optional(), // PEFT adapter folder GRPO starts from (e.g. the SFT output)
  })
  .strict();

/** Every endpoint section whose kind calls a server has a baseUrl (configs/endpoint-section.ts). */
const endpointRule = checkEndpointSections(RunConfigObject);

export const RunConfigSchema = RunConfigObject.superRefine((c, ctx) => {
  // Cross-field rules live here, each with the rule and the fix.
  endpointRule(c, ctx);
  if (c.demo.select && c.grpo.trainIds)
    ctx.addIssue({
      code: 'custom',
      path: ['demo', 'select'],
      message: 'demo.select chooses the train questions, and grpo.trainIds names them too; set one (demo.select: null to train on grpo.trainIds)',
    });
  if (c.demo.select && c.env !== 'qref')
    ctx.addIssue({
      code: 'custom',
      path: ['demo', 'select'],
      message: `demo.select is the QREF demo's pass-rate selection (env qref), but env is ${c.env}; remove it`,
    });
  if (c.encoder.kind === 'onnx' && !c.encoder.path)
    ctx.addIssue({
      code: 'custom',
      path: ['encoder', 'path'],
      message: 'encoder.kind is "onnx" but encoder.path is not set; point it at a folder with model.onnx and tokenizer.json',
    });
  if (c.grpo.epsilonHigh !== undefined && c.grpo.epsilonHigh < c.grpo.epsilon)
    ctx.addIssue({
      code: 'custom',
      path: ['grpo', 'epsilonHigh'],
      message: `grpo.epsilonHigh (${c.grpo.epsilonHigh}) must be >= grpo.epsilon (${c.grpo.epsilon}); raise it or leave it unset`,
    });
  for (const key of ['rollout', 'eval'] as const)
    if (c.env === 'qref' && c.rollout.constrained && c[key].maxTokens < REFINER_MIN_TOKENS)
      ctx.addIssue({
        code: 'custom',
        path: [key, 'maxTokens'],
        message: `${key}.maxTokens (${c[key].maxTokens}) is below ${REFINER_MIN_TOKENS}, the shortest refiner turn (plus EOS), so constrained refiner turns cannot fit (structured/qref/turn.ebnf and its refiner_turn filter); raise it or set rollout.constrained=false`,
      });
  if (c.env === 'gsteer' && c.rollout.constrained && c.rollout.maxTokens < POLICY_MIN_TOKENS)
    ctx.addIssue({
      code: 'custom',
      path: ['rollout', 'maxTokens'],
      message: `rollout.maxTokens (${c.rollout.maxTokens}) is below ${POLICY_MIN_TOKENS}, the shortest turn the policy grammar allows (plus EOS), so constrained turns cannot fit; raise it or set rollout.constrained=false`,
    });
  if (isClusterUrl(c.queues.redisUrl) && new URL(c.queues.redisUrl).pathname.length > 1)
    ctx.addIssue({
      code: 'custom',
      path: ['queues', 'redisUrl'],
      message: `queues.redisUrl "${c.queues.redisUrl}" names a database number, which a Redis Cluster does not have (only db 0); drop the path`,
    });
  if (c.rollout.retrieveTopK > c.rollout.retrieveCandidates)
    ctx.addIssue({
      code: 'custom',
      path: ['rollout', 'retrieveTopK'],
      message: `rollout.retrieveTopK (${c.rollout.retrieveTopK}) must be <= rollout.retrieveCandidates (${c.rollout.retrieveCandidates})`,
    });
  if (c.env === 'qref' && c.rollout.constrained && c.qref.turn.maxQueries > 16)
    ctx.addIssue({
      code: 'custom',
      path: ['qref', 'turn', 'maxQueries'],
      message: `qref.turn.maxQueries (${c.qref.turn.maxQueries}) is above 16, the largest refiner grammar gsteer trainer serve replays (rollout/env/grammars.ts MAX_REFINER_QUERIES); lower it or set rollout.constrained=false`,
    });
  if (c.trainer.engine === 'tinker') {
    const fix = 'or use trainer.engine=embedded';
    if (!c.trainer.baseUrl)
      ctx.addIssue({
        code: 'custom',
        path: ['trainer', 'baseUrl'],
        message: `trainer.engine is "tinker" but trainer.baseUrl is not set; set it to the engine's URL ${fix}`,
      });
    if (!c.trainer.baseModel)
      ctx.addIssue({
        code: 'custom',
        path: ['trainer', 'baseModel'],
        message: `trainer.engine is "tinker" but trainer.baseModel is not set; set the engine's name of the base (e.g. Qwen/Qwen3-8B) ${fix}`,
      });
    if (c.algorithm === 'ppo')
      ctx.addIssue({
        code: 'custom',
        path: ['algorithm'],
        message:
          'algorithm ppo needs a critic (a value head on its own LoRA), which the Tinker API has no place for; a Tinker engine trains the policy only. Use algorithm=grpo with trainer.engine=tinker, or trainer.engine=embedded (PPO trains in process)',
      });
    if (c.grpo.betaKl > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['grpo', 'betaKl'],
        message: `grpo.betaKl (${c.grpo.betaKl}) needs the reference model's logprobs, which only gsteer's own engine scores (a gsteer extension); set grpo.betaKl=0 (the paper's) ${fix}`,
      });
    if (c.policy.server === 'embedded')
      ctx.addIssue({
        code: 'custom',
        path: ['policy', 'server'],
        message:
          'trainer.engine is "tinker" but policy.server is "embedded": gsteer serve cannot load a remote engine\'s sampler weights; set policy.server=external and policy.baseUrl to the engine\'s OpenAI-compatible sampler (the rollouts name each version\'s sampler path as the model)',
      });
  }
  if (c.algorithm === 'grpo' && c.grpo.advantageScaling === 'group' && c.rollout.groupSize < 2)
    ctx.addIssue({ code: 'custom', path: ['rollout', 'groupSize'], message: 'group-normalized advantages need rollout.groupSize >= 2' });
});

export type RunConfigInput = z.input<typeof RunConfigSchema>;
export type RunConfig = z.output<typeof RunConfigSchema>;
export type RewardConfig = RunConfig['reward'];
export type GrpoConfig = RunConfig['grpo'];
export type LoraConfig = RunConfig['lora'];
export type RolloutConfig = RunConfig['rollout'];
export type EvalConfig = RunConfig['eval'];
export type EnvName = RunConfig['env'];

/** Rollouts per prompt: rollout.groupSize under GRPO, ppo.rolloutsPerPrompt under PPO (paper: 1). */
export const groupSizeOf = (c: Pick<RunConfig, 'algorithm' | 'rollout' | 'ppo'>): number =>
  c.algorithm === 'ppo' ? c.ppo.rolloutsPerPrompt : c.rollout.groupSize;
/** Prompts per update: grpo.groupsPerUpdate under GRPO, ppo.batchSize under PPO (paper: 64). */
export const groupsPerUpdateOf = (c: Pick<RunConfig, 'algorithm' | 'grpo' | 'ppo'>): number =>
  c.algorithm === 'ppo' ? c.ppo.batchSize : c.grpo.groupsPerUpdate;
/** Passes over the training instances: grpo.passes under GRPO (paper: 2), ppo.epochs under PPO (paper: 1). */
export const passesOf = (c: Pick<RunConfig, 'algorithm' | 'grpo' | 'ppo'>): number => (c.algorithm === 'ppo' ? c.ppo.epochs : c.grpo.passes);
/** The update schedule's keys (workers/schedule.ts) with the algorithm's batch size and pass count. */
export const scheduleOf = (c: Pick<RunConfig, 'algorithm' | 'grpo' | 'ppo'>): RunConfig['grpo'] => ({
  ...c.grpo,
  groupsPerUpdate: groupsPerUpdateOf(c),
  passes: passesOf(c),
});
