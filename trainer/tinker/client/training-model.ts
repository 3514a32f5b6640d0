// One LoRA on a Tinker server (the SDK's TrainingClient): forward, forward_backward, optim_step,
// save_state / load_state (with or without the optimizer), save_weights_for_sampler, get_info,
// unload. Calls are numbered by seq_id at call time (the server runs them in that order, so a
// forward_backward and the optim_step after it may be in flight together) and each carries an
// idempotency key: the caller's (deterministic from run / update / call: a restarted worker
// resending it gets the same future, never a second application) or
// "<keyPrefix>:<model>:<seq>".
import type { AdamParams, EngineDatum, GsteerCallOptions, TinkerLossFn } from '../../engine/types.ts';
import { datumToJson, type ForwardBackwardCall, type ForwardBackwardOutput, type WireDatum } from '../forward-backward.ts';
import { encodeForwardBackwardRequest } from '../proto-codec.ts';
import { zstdCompress, zstdReady } from '../zstd.ts';
import { awaitFuture, type FutureKind } from './futures.ts';
import type { TinkerHttp } from './http.ts';

export interface CallOptions {
  /** Idempotency key (deterministic from run / update / call); default <keyPrefix>:<model>:<seq>. */
  key?: string;
}

export interface ModelContext {
  http: TinkerHttp;
  keyPrefix: string;
  futureTimeoutMs: number;
  /** forward_backward body: protobuf (the 0.25 SDK's) or JSON (older servers). */
  body: 'proto' | 'json';
  /** zstd the protobuf body (Content-Encoding: zstd). */
  compress: boolean;
}

/** An EngineDatum as the wire carries it: target_tokens int64, the other inputs float32, gsteer's fields in its extension. */
export function wireDatum(d: EngineDatum): WireDatum {
  const n = d.tokens.length;
  const inputs: WireDatum['inputs'] = {};
  for (const [k, v] of Object.entries(d.inputs)) if (v) inputs[k] = { values: v, dtype: k === 'target_tokens' ? 'int64' : 'float32', shape: [n] };
  const gsteer = { ...(d.constraint ? { constraint: d.constraint } : {}), ...(d.scored ? { scored: d.scored } : {}) };
  return { tokens: d.tokens, inputs, ...(Object.keys(gsteer).length ? { gsteer } : {}) };
}

export class TrainingModel {
  private seq: number;

  constructor(
    private readonly c: ModelContext,
    readonly modelId: string,
    readonly rank: number | null,
    /** The seq_id of this model's next call (1 after create_model; get_info's gsteer_next_seq_id when re-attaching). */
    nextSeq: number,
  ) {
    this.seq = nextSeq;
  }

  get nextSeq(): number {
    return this.seq;
  }

  private async submit<K extends FutureKind>(
    route: string,
    kind: K,
    body: { json?: unknown; bytes?: Uint8Array; headers?: Record<string, string> },
    seq: number,
    o: CallOptions,
  ) {
    const key = o.key ?? `${this.c.keyPrefix}:${this.modelId}:${seq}`;
    const f = JSON.parse(Buffer.from((await this.c.http.call(route, body, { key, modelId: this.modelId })).bytes).toString('utf8')) as { request_id: string };
    return awaitFuture(this.c.http, f.request_id, kind, { timeoutMs: this.c.futureTimeoutMs, modelId: this.modelId });
  }

  private async fwdBwd(
    data: readonly EngineDatum[],
    lossFn: TinkerLossFn,
    config: Record<string, number> | undefined,
    forwardOnly: boolean,
    o: CallOptions & { gsteer?: GsteerCallOptions },
  ): Promise<ForwardBackwardOutput> {
    const seq = this.seq++;
    const call: ForwardBackwardCall = {
      modelId: this.modelId,
      seqId: seq,
      forwardOnly,
      lossFn,
      lossFnConfig: config ?? {},
      data: data.map(wireDatum),
      ...(o.gsteer ? { gsteer: o.gsteer as Record<string, unknown> } : {}),
    };
    if (this.c.body === 'json') {
      const input = { data: call.data.map(datumToJson), loss_fn: lossFn, loss_fn_config: config ?? null, ...(o.gsteer ? { gsteer: o.gsteer } : {}) };
      const json = forwardOnly
        ? { forward_input: input, model_id: this.modelId, seq_id: seq }
        : { forward_backward_input: input, model_id: this.modelId, seq_id: seq };
      return this.submit(forwardOnly ? 'forward' : 'forward_backward', 'forward_backward', { json }, seq, o);
    }
    let bytes = encodeForwardBackwardRequest(call);
    const headers: Record<string, string> = { 'content-type': 'application/x-protobuf' };
    if (this.c.compress) {
      await zstdReady();
      bytes = zstdCompress(bytes);
      headers['content-encoding'] = 'zstd';
    }
    return this.submit('forward_backward', 'forward_backward', { bytes, headers }, seq, o);
  }

  forward(
    data: readonly EngineDatum[],
    lossFn: TinkerLossFn,
    config?: Record<string, number>,
    o: CallOptions & { gsteer?: GsteerCallOptions } = {},
  ): Promise<ForwardBackwardOutput> {
    return this.fwdBwd(data, lossFn, config, true, o);
  }

  forwardBackward(
    data: readonly EngineDatum[],
    lossFn: TinkerLossFn,
    config?: Record<string, number>,
    o: CallOptions & { gsteer?: GsteerCallOptions } = {},
  ): Promise<ForwardBackwardOutput> {
    return this.fwdBwd(data, lossFn, config, false, o);
  }

  async optimStep(adam: AdamParams, o: CallOptions = {}): Promise<Record<string, number>> {
    const seq = this.seq++;
    const r = await this.submit('optim_step', 'json', { json: { adam_params: adam, model_id: this.modelId, seq_id: seq } }, seq, o);
    return (r.metrics as Record<string, number> | null) ?? {};
  }

  /** save_state: adapter + optimizer state; the tinker:// path. */
  async saveState(name: string, o: CallOptions & { overwrite?: boolean } = {}): Promise<string> {
    const seq = this.seq++;
    return (await this.submit('save_weights', 'json', { json: { model_id: this.modelId, path: name, seq_id: seq, overwrite: o.overwrite ?? false } }, seq, o))
      .path as string;
  }

  /** load_state (optimizer false) or load_state_with_optimizer (true). */
  async loadState(path: string, o: CallOptions & { optimizer: boolean }): Promise<void> {
    const seq = this.seq++;
    await this.submit('load_weights', 'json', { json: { model_id: this.modelId, path, seq_id: seq, optimizer: o.optimizer } }, seq, o);
  }

  /** The adapter for a sampler (vLLM / gsteer serve load the folder behind the path); the tinker:// path. */
  async saveWeightsForSampler(name: string, o: CallOptions = {}): Promise<string> {
    const seq = this.seq++;
    return (await this.submit('save_weights_for_sampler', 'json', { json: { model_id: this.modelId, path: name, seq_id: seq } }, seq, o)).path as string;
  }

  async unload(o: CallOptions = {}): Promise<void> {
    const f = await this.c.http.json<{ request_id: string }>(
      'unload_model',
      { model_id: this.modelId },
      { key: o.key ?? `${this.c.keyPrefix}:${this.modelId}:unload`, modelId: this.modelId },
    );
    await awaitFuture(this.c.http, f.request_id, 'json', { timeoutMs: this.c.futureTimeoutMs, modelId: this.modelId });
  }
}
