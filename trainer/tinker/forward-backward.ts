// One forward_backward (or forward) call, wire-neutral: what the JSON body and the protobuf
// body both decode to, and what gsteer's client encodes from. Tokens come from the datum's
// encoded_text chunks in order; every loss input is a decoded dense tensor. The results side
// (ForwardBackwardResult) is per-datum float32 arrays plus metrics named "name:reduction"
// (the SDK splits each key on ":" to merge chunked results; chunked_fwdbwd_helpers.py).
import { InputError } from '../../util/errors.ts';
import { decodeTensor, encodeTensor, type DenseTensor, type TensorData } from './tensor-data.ts';
import type { DatumWire, LossFn } from './wire.ts';

export interface WireDatum {
  tokens: number[];
  inputs: Record<string, DenseTensor>;
  /** gsteer's per-datum extension (README.md), absent from plain Tinker clients. */
  gsteer?: Record<string, unknown>;
}

export interface ForwardBackwardCall {
  modelId: string;
  seqId: number | null;
  forwardOnly: boolean;
  lossFn: LossFn;
  lossFnConfig: Record<string, number>;
  data: WireDatum[];
  gsteer?: Record<string, unknown>;
}

export interface ForwardBackwardOutput {
  /** The class name of the records (the SDK keeps what follows the last ":"). */
  lossFnOutputType: string;
  /** Per datum: field -> float32 values [N] (logprobs, elementwise_loss, ...). */
  outputs: Record<string, number[]>[];
  metrics: Record<string, number>;
}

/** The reductions the SDK's chunk merger knows (chunked_fwdbwd_helpers.py REDUCE_MAP). */
export const METRIC_REDUCTIONS = ['mean', 'sum', 'min', 'max', 'slack', 'hash_unordered', 'unique'] as const;

/** A metric key the SDK can merge: exactly one ":" and a known reduction, e.g. "loss:sum". */
export function checkMetricKey(key: string): void {
  const parts = key.split(':');
  if (parts.length !== 2 || !parts[0] || !(METRIC_REDUCTIONS as readonly string[]).includes(parts[1] as string))
    throw new Error(
      `internal: metric "${key}" must be "name:reduction" with reduction one of ${METRIC_REDUCTIONS.join(', ')} (the Tinker SDK splits keys on ":" to merge chunked results)`,
    );
}

/**
 * Metrics as the SDK can merge them: a key without a known reduction (an engine diagnostic such
 * as "constraint/turns") is sent as "<key>:unique", the SDK's reduction for values it cannot fold.
 */
export function sdkMetrics(metrics: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(metrics)) {
    const [name, reduction, ...rest] = k.split(':');
    out[name && !rest.length && (METRIC_REDUCTIONS as readonly string[]).includes(reduction ?? '') ? k : `${k.replace(/:/g, '/')}:unique`] = v;
  }
  return out;
}

/** ModelInput chunks -> token ids; non-text chunks are refused (gsteer's models read text only). */
export function chunkTokens(chunks: readonly { type?: string; tokens?: number[] }[], field: string): number[] {
  const out: number[] = [];
  chunks.forEach((c, i) => {
    if (c.type !== undefined && c.type !== 'encoded_text')
      throw new InputError(`${field}.chunks[${i}].type = "${c.type}": gsteer's engine reads encoded_text chunks only`);
    for (const t of c.tokens ?? []) out.push(t);
  });
  return out;
}

export function datumFromJson(d: DatumWire, field: string): WireDatum {
  const inputs: Record<string, DenseTensor> = {};
  for (const [k, t] of Object.entries(d.loss_fn_inputs)) inputs[k] = decodeTensor(t as TensorData, `${field}.loss_fn_inputs.${k}`);
  return {
    tokens: chunkTokens(d.model_input.chunks as { type?: string; tokens?: number[] }[], `${field}.model_input`),
    inputs,
    ...(d.gsteer ? { gsteer: d.gsteer } : {}),
  };
}

/** A WireDatum as the JSON body carries it (dense tensors, one encoded_text chunk). */
export function datumToJson(d: WireDatum): Record<string, unknown> {
  const loss_fn_inputs: Record<string, TensorData> = {};
  for (const [k, t] of Object.entries(d.inputs)) loss_fn_inputs[k] = { ...encodeTensor(t.values, t.dtype), shape: t.shape };
  return { model_input: { chunks: [{ type: 'encoded_text', tokens: d.tokens }] }, loss_fn_inputs, ...(d.gsteer ? { gsteer: d.gsteer } : {}) };
}

export function outputToJson(o: ForwardBackwardOutput): Record<string, unknown> {
  return {
    loss_fn_output_type: o.lossFnOutputType,
    loss_fn_outputs: o.outputs.map((rec) => Object.fromEntries(Object.entries(rec).map(([k, v]) => [k, encodeTensor(v, 'float32')]))),
    metrics: o.metrics,
  };
}

export function outputFromJson(j: {
  loss_fn_output_type: string;
  loss_fn_outputs: Record<string, TensorData>[];
  metrics: Record<string, number>;
}): ForwardBackwardOutput {
  return {
    lossFnOutputType: j.loss_fn_output_type,
    outputs: j.loss_fn_outputs.map((rec, i) =>
      Object.fromEntries(Object.entries(rec).map(([k, t]) => [k, decodeTensor(t, `loss_fn_outputs[${i}].${k}`).values])),
    ),
    metrics: j.metrics,
  };
}
