// What gsteer's Tinker-API server is built from: an engine factory (one TrainingEngine per
// create_model, trainer/engine/types.ts), an optional sampler (injected by the cli command, so
// the trainer never imports the server), and where states are kept. Names follow the Tinker API.
import type { TrainingEngine } from '../engine/types.ts';
import type { SampleResult } from '../tinker/sample.ts';

/** A LoRA as create_model asks for it: Tinker's LoraConfig plus gsteer's optional PEFT fields. */
export interface LoraSpec {
  rank: number;
  /** Initialization seed; null = the server picks one (recorded in the checkpoint meta). */
  seed: number;
  trainAttn: boolean;
  trainMlp: boolean;
  trainUnembed: boolean;
  /** gsteer extension: PEFT lora_alpha (default: the engine's). */
  alpha?: number;
  /** gsteer extension: PEFT lora_dropout. */
  dropout?: number;
  /** gsteer extension: PEFT target_modules (q_proj, ...); overrides train_attn / train_mlp. */
  targetModules?: string[];
}

export type EngineFactory = (o: { baseModel: string; lora: LoraSpec }) => Promise<TrainingEngine>;

/** One asample call, decoded. */
export interface SamplerRequest {
  /** The PEFT adapter folder to sample with (save_weights_for_sampler's output); null = the base model. */
  adapterDir: string | null;
  prompt: number[];
  numSamples: number;
  /** Tokens to sample at most (the request's max_tokens, or the server's default). */
  maxTokens: number;
  temperature: number;
  topP: number;
  /** <= 0: off. */
  topK: number;
  seed: number | null;
  stopStrings: string[];
  stopTokens: number[];
  promptLogprobs: boolean;
}

/**
 * Samples token ids with their logprobs (the SDK's SampleResponse). gsteer's (cli/commands/
 * trainer-sampler.ts) is gsteer serve's engine over the same base, loading the saved adapter.
 */
export interface Sampler {
  sample(r: SamplerRequest): Promise<SampleResult>;
  close(): Promise<void>;
}

export interface ServiceOptions {
  /** The base model's name in create_model / capabilities (e.g. the model folder as given). */
  baseModel: string;
  /** The base's context (capabilities' max_context_length). */
  maxContextLength: number;
  /** Tokenizer the SDK's get_tokenizer() would load (get_info model_data.tokenizer_id). */
  tokenizerId: string;
  /** Model architecture shown by get_info (config.json model_type). */
  arch: string;
  createEngine: EngineFactory;
  sampler?: Sampler;
  /** Where save_state / save_weights_for_sampler write (tinker:// paths map under it). */
  stateDir: string;
  host?: string;
  port?: number;
  /** Require X-API-Key (or Authorization: Bearer) to equal this; never logged. */
  apiKey?: string;
  /** client/config proto_compress_fwdbwd: ask the SDK to zstd its forward_backward bodies (default true). */
  compressForwardBackward?: boolean;
  /** A session without a heartbeat for this long is ended and its models unloaded (default 10 min; 0 = never). */
  sessionTimeoutMs?: number;
  /** The clock heartbeats are stamped and sessions swept by, in ms (default Date.now; tests drive it by hand). */
  now?: () => number;
  /** How long retrieve_future holds a pending future before answering try_again (default 10 s). */
  retrieveHoldMs?: number;
  /** Settled futures are kept this long (default 15 min) and at most this many (default 4,096). */
  futureTtlMs?: number;
  maxFuturesKept?: number;
  /** max_tokens of an asample that sends none (default 512; the SDK's default is none, i.e. up to the context). */
  defaultMaxTokens?: number;
  /** Largest request body, raw or inflated (default 256 MiB). */
  maxBodyBytes?: number;
  log?: (line: string) => void;
  logRequests?: boolean;
}
