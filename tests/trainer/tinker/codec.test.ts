// gsteer's Tinker codecs against the official SDK 0.25.0's own serializers: bytes the SDK
// wrote (tests/fixtures/tinker/sdk-forward-backward-request.json, made by
// tests/conformance/sdk_codec.py request) decode to the request built there, and bytes gsteer
// writes decode in the SDK (its response deserializers; the protobuf runtime over its
// descriptor for requests) to what gsteer meant.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  decodeForwardBackwardOutput,
  decodeForwardBackwardRequest,
  decodeSampleResponse,
  encodeForwardBackwardOutput,
  encodeForwardBackwardRequest,
  encodeSampleResponse,
} from '../../../trainer/tinker/proto-codec.ts';
import { decodeTensor, encodeTensorCsr } from '../../../trainer/tinker/tensor-data.ts';
import { declaredContentSize, zstdCompress, zstdDecompress, zstdReady } from '../../../trainer/tinker/zstd.ts';
import type { ForwardBackwardOutput } from '../../../trainer/tinker/forward-backward.ts';
import type { SampleResult } from '../../../trainer/tinker/sample.ts';
import { findTinkerSdk, sdkCodec, type TinkerSdk } from '../../helpers/tinker-sdk.ts';

const fixture = JSON.parse(readFileSync(new URL('../../fixtures/tinker/sdk-forward-backward-request.json', import.meta.url), 'utf8')) as {
  proto_b64: string;
  zstd_b64: string;
};
const sdkProto = Buffer.from(fixture.proto_b64, 'base64');
const sdkZstd = Buffer.from(fixture.zstd_b64, 'base64');
const f32 = (xs: number[]) => Array.from(Float32Array.from(xs));

beforeAll(() => zstdReady());

describe('forward_backward request bytes written by the SDK', () => {
  it('decode to the request the SDK built (tokens across chunks, int64 / float32 tensors, CSR weights, config, forward_only)', () => {
    const call = decodeForwardBackwardRequest(sdkProto);
    expect(call).toMatchObject({ modelId: 'sess-1:train:0', seqId: 7, forwardOnly: true, lossFn: 'ppo' });
    expect(call.lossFnConfig).toEqual({ clip_low_threshold: 0.8, clip_high_threshold: 1.28 });
    const [d0, d1] = call.data;
    expect(d0?.tokens).toEqual([151644, 872, 198, 9707]);
    expect(d0?.inputs.target_tokens).toEqual({ values: [872, 198, 9707, 151645], dtype: 'int64', shape: [4] });
    expect(d0?.inputs.logprobs).toEqual({ values: [-0.5, -1.25, -3, -0.125], dtype: 'float32', shape: [4] });
    expect(d0?.inputs.advantages?.values).toEqual([0, 0.75, 0.75, -2.5]);
    expect(d1?.tokens).toEqual([1, 2, 3, 4, 5, 6]);
    // CSR [2, 3]: row 0 = [0, 0.5, 0], row 1 = [0, 0, 2]
    expect(d1?.inputs.weights).toEqual({ values: [0, 0.5, 0, 0, 0, 2], dtype: 'float32', shape: [2, 3] });
  });

  it('the SDK zstd frame declares its size and inflates to the same bytes', () => {
    expect(declaredContentSize(sdkZstd)).toBe(sdkProto.length);
    expect(Buffer.from(zstdDecompress(sdkZstd, 1 << 20))).toEqual(sdkProto);
    expect(() => zstdDecompress(sdkZstd, sdkProto.length - 1)).toThrow(/inflates to \d+ bytes, beyond this server's/);
    expect(() => zstdDecompress(Buffer.from('not zstd at all'), 1 << 20)).toThrow(/must declare its content size/);
  });

  it('a truncated body is an input error naming the message type', () => {
    expect(() => decodeForwardBackwardRequest(sdkProto.subarray(0, 40))).toThrow(/not a tinker_public.ForwardBackwardRequest protobuf/);
  });
});

describe('TensorData', () => {
  it('CSR round trip, and the SDK rule: dense when CSR is not smaller', () => {
    const dense = [0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.25, 0, 0];
    const csr = encodeTensorCsr(dense, 4, 4, 'float32');
    expect(csr.sparse_crow_indices).toEqual([0, 1, 1, 1, 2]); // 3 at (0, 2), 0.25 at (3, 1)
    expect(csr.sparse_col_indices).toEqual([2, 1]);
    expect(decodeTensor(csr, 'w').values).toEqual(dense);
    expect(encodeTensorCsr([1, 2, 0, 4], 2, 2, 'float32').sparse_crow_indices).toBeUndefined();
  });

  it('bad tensors name the field and the rule', () => {
    expect(() => decodeTensor({ data: [1, 2, 3], dtype: 'int64', shape: [2] }, 'x.target_tokens')).toThrow(
      /x.target_tokens: shape \[2\] holds 2 values but data has 3/,
    );
    expect(() => decodeTensor({ data: [1.5], dtype: 'int64' }, 'x.t')).toThrow(/x.t.data\[0\] = 1.5: a int64 tensor holds integers only/);
    expect(() => decodeTensor({ data: [1], dtype: 'float32', shape: [1, 2], sparse_crow_indices: [0, 1], sparse_col_indices: [5] }, 'w')).toThrow(
      /sparse_col_indices\[0\] = 5 is outside \[0, 2\)/,
    );
  });
});

const sdk = findTinkerSdk();
const missing = 'missing' in sdk ? sdk.missing : null;
if (missing) console.warn(`SKIPPED (SDK decode checks): ${missing}`);

describe.skipIf(missing !== null && !process.env.CI)('bytes gsteer writes, read by the official SDK', () => {
  const py = () => {
    if (missing) throw new Error(`CI=true and ${missing}`);
    return sdk as TinkerSdk;
  };

  it('forward_backward request (protobuf, and zstd) parses to the same call', () => {
    const call = decodeForwardBackwardRequest(sdkProto);
    const mine = encodeForwardBackwardRequest(call);
    for (const [b64, zstd] of [
      [Buffer.from(mine).toString('base64'), false],
      [Buffer.from(zstdCompress(mine)).toString('base64'), true],
    ] as const) {
      const parsed = sdkCodec(py(), 'parse_request', { b64, zstd }) as Record<string, unknown> & {
        data: { tokens: number[]; loss_fn_inputs: Record<string, { data: number[]; shape: number[]; dtype: string }> }[];
      };
      expect(parsed).toMatchObject({ model_id: 'sess-1:train:0', seq_id: 7, loss_fn: 'ppo', forward_only: true });
      expect(parsed.data[0]?.tokens).toEqual([151644, 872, 198, 9707]);
      expect(parsed.data[0]?.loss_fn_inputs.target_tokens).toEqual({ data: [872, 198, 9707, 151645], shape: [4], dtype: 'DTYPE_INT64' });
      expect(parsed.data[1]?.loss_fn_inputs.weights).toEqual({ data: [0, 0.5, 0, 0, 0, 2], shape: [2, 3], dtype: 'DTYPE_FLOAT32' });
    }
  });

  it("gsteer's extension fields (1001) round-trip in gsteer's codec and are skipped by the SDK's descriptor", () => {
    const call = { ...decodeForwardBackwardRequest(sdkProto), gsteer: { prefixGrouping: true } };
    call.data[0] = { ...call.data[0]!, gsteer: { scored: [0, 1, 1, 1] } };
    const bytes = encodeForwardBackwardRequest(call);
    expect(decodeForwardBackwardRequest(bytes)).toMatchObject({ gsteer: { prefixGrouping: true }, data: [{ gsteer: { scored: [0, 1, 1, 1] } }, {}] });
    const parsed = sdkCodec(py(), 'parse_request', { b64: Buffer.from(bytes).toString('base64') }) as { data: { tokens: number[] }[] };
    expect(parsed.data[0]?.tokens).toEqual([151644, 872, 198, 9707]);
  });

  it('ForwardBackwardOutput: the SDK reads per-datum arrays, dtype, shape and metrics', () => {
    const out: ForwardBackwardOutput = {
      lossFnOutputType: 'ArrayRecord',
      outputs: [
        { logprobs: [-0.1, -2.3, -0.7], elementwise_loss: [0, 1.5, 0.25] },
        { logprobs: [-4.2], elementwise_loss: [3.3] },
      ],
      metrics: { 'loss:sum': 5.05, 'clipfrac:mean': 0.25 },
    };
    const bytes = encodeForwardBackwardOutput(out);
    const seen = sdkCodec(py(), 'output', { b64: Buffer.from(bytes).toString('base64') }) as {
      loss_fn_output_type: string;
      metrics: Record<string, number>;
      loss_fn_outputs: Record<string, { data: number[]; dtype: string; shape: number[] }>[];
    };
    expect(seen.loss_fn_output_type).toBe('ArrayRecord');
    expect(seen.metrics).toEqual(out.metrics);
    expect(seen.loss_fn_outputs).toEqual(
      out.outputs.map((rec) => Object.fromEntries(Object.entries(rec).map(([k, v]) => [k, { data: f32(v), dtype: 'float32', shape: [v.length] }]))),
    );
    expect(decodeForwardBackwardOutput(bytes)).toEqual({
      ...out,
      outputs: out.outputs.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, f32(v)]))),
    });
  });

  it('SampleResponse: tokens, logprobs, stop reasons and prompt logprobs (null first)', () => {
    const r: SampleResult = {
      sequences: [
        { tokens: [5, 151645], logprobs: [-1.5, -0.25], stopReason: 'stop' },
        { tokens: [7, 8, 9], logprobs: [-0.5, -2, -3.75], stopReason: 'length' },
      ],
      promptLogprobs: [null, -3.5, -0.75],
      promptCacheHitTokens: 0,
    };
    const bytes = encodeSampleResponse(r);
    const seen = sdkCodec(py(), 'sample', { b64: Buffer.from(bytes).toString('base64') });
    expect(seen).toEqual({
      sequences: [
        { tokens: [5, 151645], logprobs: [-1.5, -0.25], stop_reason: 'stop' },
        { tokens: [7, 8, 9], logprobs: [-0.5, -2, -3.75], stop_reason: 'length' },
      ],
      prompt_logprobs: [null, -3.5, -0.75],
      prompt_cache_hit_tokens: 0,
    });
    expect(decodeSampleResponse(bytes)).toEqual(r);
  });
});
