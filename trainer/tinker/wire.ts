// The Tinker API's JSON bodies as the 0.25 SDK sends and reads them (src/tinker/types/*.py),
// as zod schemas: one source for gsteer's server (requests in) and client (responses in).
// Unknown fields are dropped, not refused (new SDKs add fields), and SDK defaults are applied
// where the SDK leaves a field out (model_dump exclude_none). gsteer's extension fields are the
// optional `gsteer` objects (README.md, "gsteer's extensions"); a plain Tinker client never sends them.
import { z } from 'zod';

const int = z.number().int();
const id = z.string().min(1);

export const TensorDataSchema = z.object({
  data: z.array(z.number()),
  dtype: z.enum(['int64', 'float32']),
  shape: z.array(int).nullish(),
  sparse_crow_indices: z.array(int).nullish(),
  sparse_col_indices: z.array(int).nullish(),
});

/** ModelInput chunks; only encoded_text is read (images and audio are refused by name). */
export const ChunkSchema = z.union([
  z.object({ type: z.literal('encoded_text').default('encoded_text'), tokens: z.array(int) }),
  z.object({ type: z.enum(['image', 'image_asset_pointer', 'dmel']) }).loose(),
]);
export const ModelInputSchema = z.object({ chunks: z.array(ChunkSchema) });

/** gsteer's per-datum extensions (trainer/engine/types.ts EngineDatum.constraint, .scored). */
export const DatumExtensionSchema = z.object({ constraint: z.record(z.string(), z.unknown()).optional(), scored: z.array(z.number()).optional() }).loose();
/** gsteer's per-call extension (e.g. options for gsteer's own engine; passed through). */
export const CallExtensionSchema = z.record(z.string(), z.unknown());

export const DatumSchema = z.object({
  model_input: ModelInputSchema,
  loss_fn_inputs: z.record(z.string(), TensorDataSchema),
  gsteer: DatumExtensionSchema.optional(),
});

export const LossFnSchema = z.enum(['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro']);

export const ForwardBackwardInputSchema = z.object({
  data: z.array(DatumSchema),
  loss_fn: LossFnSchema,
  loss_fn_config: z.record(z.string(), z.number()).nullish(),
  gsteer: CallExtensionSchema.optional(),
});

export const ForwardBackwardRequestSchema = z.object({ forward_backward_input: ForwardBackwardInputSchema, model_id: id, seq_id: int.nullish() });
/** The pre-0.25 JSON `/forward` route. */
export const ForwardRequestSchema = z.object({ forward_input: ForwardBackwardInputSchema, model_id: id, seq_id: int.nullish() });

/** SDK defaults (types/optim_step_request.py): lr 1e-4, betas 0.9 / 0.95, eps 1e-12, no decay, no clip. */
export const AdamParamsSchema = z.object({
  learning_rate: z.number().default(1e-4),
  beta1: z.number().default(0.9),
  beta2: z.number().default(0.95),
  eps: z.number().default(1e-12),
  weight_decay: z.number().default(0),
  grad_clip_norm: z.number().default(0),
});
export const OptimStepRequestSchema = z.object({ adam_params: AdamParamsSchema, model_id: id, seq_id: int.nullish() });

export const CreateSessionRequestSchema = z.object({
  tags: z.array(z.string()).default([]),
  user_metadata: z.record(z.string(), z.unknown()).nullish(),
  sdk_version: z.string().default('unknown'),
  project_id: z.string().nullish(),
});
export const SessionHeartbeatRequestSchema = z.object({ session_id: id });

export const LoraConfigSchema = z.object({
  rank: int.positive(),
  seed: int.nullish(),
  train_unembed: z.boolean().default(true),
  train_mlp: z.boolean().default(true),
  train_attn: z.boolean().default(true),
});
/** gsteer's LoRA extension: what PEFT has and Tinker's LoraConfig does not. */
export const LoraExtensionSchema = z.object({
  lora_alpha: z.number().positive().optional(),
  lora_dropout: z.number().min(0).max(1).optional(),
  target_modules: z.array(z.string()).min(1).optional(),
});
export const CreateModelRequestSchema = z.object({
  session_id: id,
  model_seq_id: int.nonnegative(),
  base_model: id,
  user_metadata: z.record(z.string(), z.unknown()).nullish(),
  lora_config: LoraConfigSchema.nullish(),
  gsteer: LoraExtensionSchema.optional(),
});

export const ModelIdRequestSchema = z.object({ model_id: id });
export const FutureRetrieveRequestSchema = z.object({ request_id: id, allow_metadata_only: z.boolean().default(false) });

export const SaveWeightsRequestSchema = z.object({
  model_id: id,
  path: z.string().nullish(),
  seq_id: int.nullish(),
  ttl_seconds: int.nullish(),
  overwrite: z.boolean().default(false),
});
export const SaveWeightsForSamplerRequestSchema = z.object({
  model_id: id,
  path: z.string().nullish(),
  sampling_session_seq_id: int.nullish(),
  seq_id: int.nullish(),
  ttl_seconds: int.nullish(),
});
export const LoadWeightsRequestSchema = z.object({
  model_id: z.string().nullish(),
  seq_id: int.nullish(),
  session_id: z.string().nullish(),
  model_seq_id: int.nullish(),
  base_model: z.string().nullish(),
  user_metadata: z.record(z.string(), z.unknown()).nullish(),
  path: id,
  optimizer: z.boolean(),
  weights_access_token: z.string().nullish(),
});

export const CreateSamplingSessionRequestSchema = z.object({
  session_id: id,
  sampling_session_seq_id: int.nonnegative(),
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
});

/** SDK defaults (types/sampling_params.py): temperature 1, top_k -1 (off), top_p 1. */
export const SamplingParamsSchema = z.object({
  max_tokens: int.positive().nullish(),
  seed: int.nullish(),
  stop: z.union([z.string(), z.array(z.string()), z.array(int)]).nullish(),
  temperature: z.number().min(0).default(1),
  top_k: int.default(-1),
  top_p: z.number().gt(0).max(1).default(1),
});
export const SampleRequestSchema = z.object({
  num_samples: int.positive().default(1),
  prompt: ModelInputSchema,
  sampling_params: SamplingParamsSchema,
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
  sampling_session_id: z.string().nullish(),
  seq_id: int.nullish(),
  prompt_logprobs: z.boolean().nullish(),
  topk_prompt_logprobs: int.nonnegative().default(0),
});
export const WeightsInfoRequestSchema = z.object({ tinker_path: id });

// ---- responses (what gsteer's server writes and its client reads) ----

export const UntypedFutureSchema = z.object({ request_id: id, model_id: z.string().nullish() });
export const TryAgainSchema = z.object({ type: z.literal('try_again'), request_id: z.string(), queue_state: z.string().nullish() });
export const RequestFailedSchema = z.object({ error: z.string(), category: z.string() });
export const CreateSessionResponseSchema = z.object({
  session_id: id,
  info_message: z.string().nullish(),
  warning_message: z.string().nullish(),
  error_message: z.string().nullish(),
});
export const CreateModelResponseSchema = z.object({ model_id: id });
export const CreateSamplingSessionResponseSchema = z.object({ sampling_session_id: id });
export const SaveWeightsResponseSchema = z.object({ path: id });
export const SaveWeightsForSamplerResponseSchema = z.object({ path: z.string().nullish(), sampling_session_id: z.string().nullish() });
export const LoadWeightsResponseSchema = z.object({ path: z.string().nullish(), model_id: z.string().nullish() });
export const OptimStepResponseSchema = z.object({ metrics: z.record(z.string(), z.number()).nullish() });
export const UnloadModelResponseSchema = z.object({ model_id: id });
export const ServerCapabilitiesSchema = z.object({
  supported_models: z.array(z.object({ model_name: z.string().nullish(), max_context_length: int.nullish() })),
});
export const GetInfoResponseSchema = z.object({
  model_id: id,
  model_data: z.object({ arch: z.string().nullish(), model_name: z.string().nullish(), tokenizer_id: z.string().nullish() }),
  is_lora: z.boolean().nullish(),
  lora_rank: int.nullish(),
  model_name: z.string().nullish(),
  /** gsteer extension: the seq_id the model runs next (a client re-attaching to a live model continues from it). */
  gsteer_next_seq_id: int.optional(),
});
export const WeightsInfoResponseSchema = z.object({
  base_model: z.string(),
  is_lora: z.boolean(),
  lora_rank: int.nullish(),
  train_unembed: z.boolean().nullish(),
  train_mlp: z.boolean().nullish(),
  train_attn: z.boolean().nullish(),
});
export const ForwardBackwardOutputJsonSchema = z.object({
  loss_fn_output_type: z.string(),
  loss_fn_outputs: z.array(z.record(z.string(), TensorDataSchema)),
  metrics: z.record(z.string(), z.number()).default({}),
});

export type LossFn = z.infer<typeof LossFnSchema>;
export type AdamParamsWire = z.infer<typeof AdamParamsSchema>;
export type LoraConfigWire = z.infer<typeof LoraConfigSchema>;
export type LoraExtension = z.infer<typeof LoraExtensionSchema>;
export type SamplingParamsWire = z.infer<typeof SamplingParamsSchema>;
export type SampleRequestWire = z.infer<typeof SampleRequestSchema>;
export type DatumWire = z.infer<typeof DatumSchema>;
