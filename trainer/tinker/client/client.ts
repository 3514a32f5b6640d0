// gsteer's TypeScript client of the Tinker API (the 0.25 SDK's ServiceClient): reads the
// server's client config (whether to zstd forward_backward bodies), opens a session and keeps
// it alive with heartbeats every 10 s (the SDK's period; a timer that never holds the process
// open), asks for capabilities, creates LoRA models or re-attaches to a live one, reads
// weights_info, and samples. Every HTTP attempt is a TrainerCallRecord (records.ts).
import { InputError } from '../../../util/errors.ts';
import type { SampleResult } from '../sample.ts';
import type { LoraExtension } from '../wire.ts';
import { awaitFuture } from './futures.ts';
import { TinkerHttp, type TinkerHttpOptions } from './http.ts';
import { TrainingModel, type ModelContext } from './training-model.ts';

export interface TinkerClientOptions extends Omit<TinkerHttpOptions, 'timeoutMs' | 'maxRetries' | 'concurrency'> {
  timeoutMs?: number; // default 60 s per attempt
  maxRetries?: number; // default 4
  concurrency?: number; // default 16
  /** Prefix of default idempotency keys (e.g. the run id); default a random one per client. */
  keyPrefix?: string;
  /** How long to wait for one future (default 30 min). */
  futureTimeoutMs?: number;
  /** forward_backward body (default proto, as the 0.25 SDK). */
  body?: 'proto' | 'json';
  /** zstd the protobuf body: auto = as the server's client config says (default). */
  compress?: 'auto' | 'on' | 'off';
  heartbeatMs?: number; // default 10 s; 0 = none
  onHeartbeatError?: (e: unknown) => void;
  /** Metadata and tags of the session (Tinker's create_session). */
  tags?: string[];
}

export interface SampleOptions {
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  seed?: number;
  stop?: string[] | number[];
  numSamples?: number;
  promptLogprobs?: boolean;
  key?: string;
}

export class TinkerClient {
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private samplingSeq = 0;
  private reads = 0;

  private constructor(
    readonly http: TinkerHttp,
    readonly sessionId: string,
    private readonly ctx: ModelContext,
    private modelSeq = 0,
  ) {}

  static async connect(o: TinkerClientOptions): Promise<TinkerClient> {
    const http = new TinkerHttp({ ...o, timeoutMs: o.timeoutMs ?? 60_000, maxRetries: o.maxRetries ?? 4, concurrency: o.concurrency ?? 16 });
    const keyPrefix = o.keyPrefix ?? `gsteer-${Math.random().toString(36).slice(2, 10)}`;
    const config = await http.json<{ proto_compress_fwdbwd?: boolean }>('client/config', { sdk_version: 'gsteer' }, { key: `${keyPrefix}:client-config` });
    const s = await http.json<{ session_id: string }>(
      'create_session',
      { tags: o.tags ?? ['gsteer'], user_metadata: {}, sdk_version: 'gsteer' },
      { key: `${keyPrefix}:session` },
    );
    const compress = o.compress === 'on' || ((o.compress ?? 'auto') === 'auto' && config.proto_compress_fwdbwd === true);
    const client = new TinkerClient(http, s.session_id, {
      http,
      keyPrefix,
      futureTimeoutMs: o.futureTimeoutMs ?? 30 * 60_000,
      body: o.body ?? 'proto',
      compress,
    });
    const every = o.heartbeatMs ?? 10_000;
    if (every > 0) {
      let beat = 0;
      client.heartbeat = setInterval(() => {
        http
          .json('session_heartbeat', { session_id: s.session_id, type: 'session_heartbeat' }, { key: `${keyPrefix}:heartbeat:${beat++}` })
          .catch((e) => o.onHeartbeatError?.(e));
      }, every);
      client.heartbeat.unref();
    }
    return client;
  }

  capabilities(): Promise<{ supported_models: { model_name?: string | null; max_context_length?: number | null }[] }> {
    return this.http.json('get_server_capabilities', null, { key: null });
  }

  /** create_model: a new LoRA (Tinker's LoraConfig; `gsteer` = lora_alpha / lora_dropout / target_modules, for gsteer's engine). */
  async createModel(o: {
    baseModel: string;
    rank: number;
    seed?: number;
    trainAttn?: boolean;
    trainMlp?: boolean;
    trainUnembed?: boolean;
    gsteer?: LoraExtension;
    key?: string;
  }): Promise<TrainingModel> {
    const modelSeq = this.modelSeq++;
    const body = {
      session_id: this.sessionId,
      model_seq_id: modelSeq,
      base_model: o.baseModel,
      lora_config: {
        rank: o.rank,
        seed: o.seed ?? null,
        train_attn: o.trainAttn ?? true,
        train_mlp: o.trainMlp ?? true,
        train_unembed: o.trainUnembed ?? true,
      },
      ...(o.gsteer ? { gsteer: o.gsteer } : {}),
    };
    const key = o.key ?? `${this.ctx.keyPrefix}:${this.sessionId}:create:${modelSeq}`;
    const f = await this.http.json<{ request_id: string }>('create_model', body, { key });
    const r = await awaitFuture(this.http, f.request_id, 'json', { timeoutMs: this.ctx.futureTimeoutMs });
    return new TrainingModel(this.ctx, String(r.model_id), o.rank, 1);
  }

  /** A live model by id (e.g. after this worker restarted): continues from the server's next seq_id (gsteer's get_info extension). */
  async attachModel(modelId: string): Promise<TrainingModel> {
    const info = await this.getInfo(modelId);
    if (info.gsteer_next_seq_id === undefined)
      throw new InputError(
        `model ${modelId}: the server does not report its next seq_id (gsteer's get_info extension); re-attaching needs gsteer's trainer service; create a model and load_state instead`,
      );
    return new TrainingModel(this.ctx, modelId, info.lora_rank ?? null, info.gsteer_next_seq_id);
  }

  getInfo(modelId: string): Promise<{
    model_id: string;
    lora_rank?: number | null;
    model_data: { model_name?: string | null; tokenizer_id?: string | null };
    gsteer_next_seq_id?: number;
  }> {
    return this.http.json(
      'get_info',
      { model_id: modelId, type: 'get_info' },
      { key: `${this.ctx.keyPrefix}:${this.sessionId}:get_info:${this.reads++}`, modelId },
    );
  }

  weightsInfo(tinkerPath: string): Promise<{ base_model: string; is_lora: boolean; lora_rank?: number | null }> {
    return this.http.json('weights_info', { tinker_path: tinkerPath }, { key: `${this.ctx.keyPrefix}:${this.sessionId}:weights_info:${this.reads++}` });
  }

  /** asample against a tinker:// path (or the base model); tokens, their logprobs and stop reasons. */
  async sample(target: { modelPath: string } | { baseModel: string }, prompt: number[], o: SampleOptions = {}): Promise<SampleResult> {
    const body = {
      ...('modelPath' in target ? { model_path: target.modelPath } : { base_model: target.baseModel }),
      prompt: { chunks: [{ type: 'encoded_text', tokens: prompt }] },
      num_samples: o.numSamples ?? 1,
      sampling_params: {
        max_tokens: o.maxTokens ?? null,
        temperature: o.temperature ?? 1,
        top_p: o.topP ?? 1,
        top_k: o.topK ?? -1,
        seed: o.seed ?? null,
        stop: o.stop ?? null,
      },
      prompt_logprobs: o.promptLogprobs ?? false,
    };
    const f = await this.http.json<{ request_id: string }>('asample', body, {
      key: o.key ?? `${this.ctx.keyPrefix}:${this.sessionId}:sample:${this.samplingSeq++}`,
    });
    return awaitFuture(this.http, f.request_id, 'sample', { timeoutMs: this.ctx.futureTimeoutMs });
  }

  /** Stop the heartbeats (the server ends the session after its timeout). */
  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}
