// Encode / decode the protobuf bodies of proto-schema.ts to and from the wire-neutral records
// of forward-backward.ts and sample.ts. The layouts follow the SDK's converters (0.25,
// proto/request_conv.py and proto/response_conv.py): a datum's tokens are int32 bytes per
// encoded_text chunk; a dense tensor is its values in its dtype; a CSR tensor its values plus
// int64 crow / col indices; a result field is one BatchedTensor over all datums, sliced by
// int64 byte offsets, each datum's array [leading, ...trailing_shape].
import { InputError } from '../../util/errors.ts';
import { float32Bytes, int32Bytes, int64Bytes, readBfloat16, readFloat32, readInt32, readInt64 } from './bytes.ts';
import { checkMetricKey, type ForwardBackwardCall, type ForwardBackwardOutput, type WireDatum } from './forward-backward.ts';
import { DTYPE, pb, STOP_REASON } from './proto-schema.ts';
import type { SampleResult } from './sample.ts';
import { decodeTensor, type DenseTensor, type TensorDtype } from './tensor-data.ts';
import { LossFnSchema } from './wire.ts';

const OBJ = { longs: Number, defaults: true, arrays: true, objects: true, oneofs: true } as const;

/** Values in a proto DType -> numbers and the public dtype (int32 widens to int64, bfloat16 to float32, as the SDK does). */
function readValues(bytes: Uint8Array, dtype: number, field: string): { values: number[]; dtype: TensorDtype } {
  switch (dtype) {
    case DTYPE.FLOAT32:
      return { values: readFloat32(bytes, field), dtype: 'float32' };
    case DTYPE.INT64:
      return { values: readInt64(bytes, field), dtype: 'int64' };
    case DTYPE.INT32:
      return { values: readInt32(bytes, field), dtype: 'int64' };
    case DTYPE.BFLOAT16:
      return { values: readBfloat16(bytes, field), dtype: 'float32' };
    default:
      throw new InputError(`${field}.dtype = ${dtype}: expected DTYPE_FLOAT32 (1), DTYPE_INT64 (2), DTYPE_INT32 (3) or DTYPE_BFLOAT16 (4)`);
  }
}

interface TensorMsg {
  encoding?: 'dense' | 'sparse_csr';
  dense?: Uint8Array;
  sparse_csr?: { values: Uint8Array; crow_indices: Uint8Array; col_indices: Uint8Array };
  dtype: number;
  shape: number[];
}

function tensorFromProto(t: TensorMsg, field: string): DenseTensor {
  const shape = t.shape.length ? t.shape : null;
  if (t.encoding === 'sparse_csr' && t.sparse_csr) {
    const { values, dtype } = readValues(t.sparse_csr.values, t.dtype, `${field}.sparse_csr.values`);
    return decodeTensor(
      {
        data: values,
        dtype,
        shape,
        sparse_crow_indices: readInt64(t.sparse_csr.crow_indices, `${field}.sparse_csr.crow_indices`),
        sparse_col_indices: readInt64(t.sparse_csr.col_indices, `${field}.sparse_csr.col_indices`),
      },
      field,
    );
  }
  const { values, dtype } = readValues(t.dense ?? new Uint8Array(), t.dtype, `${field}.dense`);
  return decodeTensor({ data: values, dtype, shape }, field);
}

function parseExtension(json: string, field: string): Record<string, unknown> | undefined {
  if (!json) return undefined;
  try {
    const v = JSON.parse(json) as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new InputError(`${field}.gsteer_json must be a JSON object (gsteer's extension field)`);
}

export function decodeForwardBackwardRequest(bytes: Uint8Array): ForwardBackwardCall {
  let msg: Record<string, unknown>;
  try {
    msg = pb.ForwardBackwardRequest.toObject(pb.ForwardBackwardRequest.decode(bytes), OBJ);
  } catch (e) {
    throw new InputError(`forward_backward body is not a tinker_public.ForwardBackwardRequest protobuf (${(e as Error).message})`);
  }
  const m = msg as {
    model_id: string;
    seq_id: number;
    data: Record<string, unknown>[];
    loss_fn: string;
    loss_fn_config: Record<string, number>;
    forward_only: boolean;
    gsteer_json: string;
  };
  const loss = LossFnSchema.safeParse(m.loss_fn);
  if (!loss.success) throw new InputError(`forward_backward.loss_fn = "${m.loss_fn}": must be one of ${LossFnSchema.options.join(', ')}`);
  if (!m.model_id) throw new InputError('forward_backward.model_id is empty; send the model_id create_model returned');
  const data = m.data.map((d, i): WireDatum => {
    const field = `forward_backward.data[${i}]`;
    const chunks = d.model_input as { chunk?: string; encoded_text?: { tokens: Uint8Array } }[];
    const tokens: number[] = [];
    chunks.forEach((c, j) => {
      if (c.chunk !== 'encoded_text' || !c.encoded_text)
        throw new InputError(`${field}.model_input[${j}] is a ${c.chunk ?? 'empty'} chunk: gsteer's engine reads encoded_text chunks only`);
      tokens.push(...readInt32(c.encoded_text.tokens, `${field}.model_input[${j}].encoded_text.tokens`));
    });
    const inputs: Record<string, DenseTensor> = {};
    for (const [k, t] of Object.entries(d.loss_fn_inputs as Record<string, TensorMsg>)) inputs[k] = tensorFromProto(t, `${field}.loss_fn_inputs.${k}`);
    const gsteer = parseExtension(d.gsteer_json as string, field);
    return { tokens, inputs, ...(gsteer ? { gsteer } : {}) };
  });
  const gsteer = parseExtension(m.gsteer_json, 'forward_backward');
  return {
    modelId: m.model_id,
    seqId: m.seq_id,
    forwardOnly: m.forward_only,
    lossFn: loss.data,
    lossFnConfig: { ...m.loss_fn_config },
    data,
    ...(gsteer ? { gsteer } : {}),
  };
}

function tensorToProto(t: DenseTensor): Record<string, unknown> {
  return {
    dense: t.dtype === 'int64' ? int64Bytes(t.values) : float32Bytes(t.values),
    dtype: t.dtype === 'int64' ? DTYPE.INT64 : DTYPE.FLOAT32,
    shape: t.shape,
  };
}

export function encodeForwardBackwardRequest(call: ForwardBackwardCall): Uint8Array {
  const msg = pb.ForwardBackwardRequest.create({
    model_id: call.modelId,
    seq_id: call.seqId ?? 0,
    loss_fn: call.lossFn,
    loss_fn_config: call.lossFnConfig,
    forward_only: call.forwardOnly,
    gsteer_json: call.gsteer ? JSON.stringify(call.gsteer) : '',
    data: call.data.map((d) => ({
      model_input: [{ encoded_text: { tokens: int32Bytes(d.tokens) } }],
      loss_fn_inputs: Object.fromEntries(Object.entries(d.inputs).map(([k, t]) => [k, tensorToProto(t)])),
      gsteer_json: d.gsteer ? JSON.stringify(d.gsteer) : '',
    })),
  });
  return pb.ForwardBackwardRequest.encode(msg).finish();
}

/** One ArrayRecord with a float32 BatchedTensor per field (every datum 1-D, trailing shape []). */
export function encodeForwardBackwardOutput(o: ForwardBackwardOutput): Uint8Array {
  for (const k of Object.keys(o.metrics)) checkMetricKey(k);
  const names = o.outputs.length ? Object.keys(o.outputs[0] as object) : [];
  const fields: Record<string, unknown> = {};
  for (const name of names) {
    const offsets = [0];
    const all: number[] = [];
    o.outputs.forEach((rec, i) => {
      const v = rec[name];
      if (!v) throw new Error(`internal: datum ${i} has no output "${name}" (every datum must have the same fields)`);
      for (const x of v) all.push(x);
      offsets.push(all.length * 4);
    });
    fields[name] = { data: float32Bytes(all), offsets: int64Bytes(offsets), dtype: DTYPE.FLOAT32, trailing_shape: [] };
  }
  const records = o.outputs.length ? [{ type_tag: o.lossFnOutputType, fields, num_datums: o.outputs.length }] : [];
  return pb.ForwardBackwardOutput.encode(
    pb.ForwardBackwardOutput.create({ loss_fn_output_type: o.lossFnOutputType, loss_fn_outputs: records, metrics: o.metrics }),
  ).finish();
}

export function decodeForwardBackwardOutput(bytes: Uint8Array): ForwardBackwardOutput {
  const m = pb.ForwardBackwardOutput.toObject(pb.ForwardBackwardOutput.decode(bytes), OBJ) as {
    loss_fn_output_type: string;
    loss_fn_outputs: { fields: Record<string, { data: Uint8Array; offsets: Uint8Array; dtype: number }>; num_datums: number }[];
    metrics: Record<string, number>;
  };
  const outputs: Record<string, number[]>[] = [];
  for (const rec of m.loss_fn_outputs) {
    const base = outputs.length;
    for (let i = 0; i < rec.num_datums; i++) outputs.push({});
    for (const [name, bt] of Object.entries(rec.fields)) {
      const { values } = readValues(bt.data, bt.dtype, `loss_fn_outputs.${name}`);
      const size = bt.dtype === DTYPE.INT64 ? 8 : bt.dtype === DTYPE.BFLOAT16 ? 2 : 4;
      const off = readInt64(bt.offsets, `loss_fn_outputs.${name}.offsets`);
      for (let i = 0; i + 1 < off.length; i++)
        (outputs[base + i] as Record<string, number[]>)[name] = values.slice((off[i] as number) / size, (off[i + 1] as number) / size);
    }
  }
  return { lossFnOutputType: m.loss_fn_output_type.split(':').pop() as string, outputs, metrics: m.metrics };
}

export function encodeSampleResponse(r: SampleResult): Uint8Array {
  const msg = pb.SampleResponse.create({
    sequences: r.sequences.map((s) => ({ stop_reason: STOP_REASON[s.stopReason], tokens: int32Bytes(s.tokens), logprobs: float32Bytes(s.logprobs) })),
    ...(r.promptLogprobs ? { prompt_logprobs: float32Bytes(r.promptLogprobs.map((x) => (x === null ? NaN : x))) } : {}),
    prompt_cache_hit_tokens: r.promptCacheHitTokens,
  });
  return pb.SampleResponse.encode(msg).finish();
}

export function decodeSampleResponse(bytes: Uint8Array): SampleResult {
  const m = pb.SampleResponse.toObject(pb.SampleResponse.decode(bytes), { ...OBJ, defaults: false }) as {
    sequences?: { stop_reason?: number; tokens?: Uint8Array; logprobs?: Uint8Array }[];
    prompt_logprobs?: Uint8Array;
    prompt_cache_hit_tokens?: number;
  };
  return {
    sequences: (m.sequences ?? []).map((s, i) => ({
      stopReason: (s.stop_reason ?? 0) === STOP_REASON.length ? 'length' : 'stop',
      tokens: readInt32(s.tokens ?? new Uint8Array(), `sequences[${i}].tokens`),
      logprobs: readFloat32(s.logprobs ?? new Uint8Array(), `sequences[${i}].logprobs`),
    })),
    promptLogprobs: m.prompt_logprobs ? readFloat32(m.prompt_logprobs, 'prompt_logprobs').map((x) => (Number.isNaN(x) ? null : x)) : null,
    promptCacheHitTokens: m.prompt_cache_hit_tokens ?? 0,
  };
}
