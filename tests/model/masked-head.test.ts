// The masked log-softmax without an [N, V] bias (model/masked-head.ts) at Qwen3's full
// vocabulary: masks of each side (a few allowed ids, all but a few thousand, and half the
// vocabulary: dense) score as the [N, V] bias path does: logprobs, entropies, LoRA gradients.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoraSchema } from '../../configs/schema.ts';
import { selectBackend } from '../../model/backend.ts';
import { loadModel, tokenLogprobs, type Qwen3Model } from '../../model/index.ts';
import { PRESETS, initModel } from '../../model/init.ts';
import { createLora } from '../../model/lora/lora.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import { maskSide, SIDE_MAX } from '../../model/masked-head.ts';
import type { MaskVia, TokenMasks } from '../../model/token-masks.ts';
import { Rng } from '../../util/rng.ts';

const V = 151_936;
const bitmask = (ids: Iterable<number>): Int32Array => {
  const m = new Int32Array(Math.ceil(V / 32));
  for (const id of ids) m[id >> 5]! |= 1 << (id & 31);
  return m;
};

describe(`sparse masked scoring at ${V.toLocaleString('en')} ids`, () => {
  let dir: string;
  let model: Qwen3Model;
  let adapter: LoraAdapter;
  const rng = new Rng(11);
  const pick = () => Math.floor(rng.next() * V);
  const seqs = [Array.from({ length: 11 }, pick), Array.from({ length: 8 }, pick)];
  const targets = new Set(seqs.flat());
  // allowed side: 300 ids; complement: all but 3,000; dense: every other id (both sides ~76K)
  const small = new Set([...targets, ...Array.from({ length: 300 }, pick)]);
  const denied = () => new Set(Array.from({ length: 3000 }, pick).filter((v) => !targets.has(v)));
  const [deniedIds, deniedToo] = [denied(), denied()];
  const allBut = (d: Set<number>) => bitmask([...Array(V).keys()].filter((v) => !d.has(v)));
  // two complement masks: their union of disallowed rows is not either's own set
  const table = [bitmask(small), allBut(deniedIds), bitmask([...Array(V).keys()].filter((v) => v % 2 === 0 || targets.has(v))), allBut(deniedToo)];
  // every kind in each sequence, and in the same micro-batch; columns 0 and 1 unmasked
  const masks: TokenMasks[] = seqs.map((s) => ({ table, index: s.map((_, t) => (t < 2 ? -1 : t % 4)) }));

  beforeAll(async () => {
    await selectBackend('cpu', () => {});
    dir = mkdtempSync(join(tmpdir(), 'gsteer-masked-head-'));
    initModel(dir, { ...PRESETS.tiny!, numHiddenLayers: 1 }, { seed: 3, keptIds: null });
    model = await loadModel(dir);
    adapter = createLora(model, LoraSchema.parse({ r: 4 }), 5);
    // LoRA B starts at 0: move it so that the gradients reach every parameter
    tf.tidy(() => adapter.variables().forEach((v, i) => v.assign(tf.randomNormal(v.shape, 0, 0.05, 'float32', 20 + i))));
  }, 120_000);
  afterAll(() => {
    adapter.dispose();
    model.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('each mask takes its side: a few allowed ids, all but a few, or dense', () => {
    expect(table.map((m) => maskSide(m, V, null).side)).toEqual(['allowed', 'complement', 'dense', 'complement']);
    const { rows } = maskSide(table[1]!, V, null);
    expect(rows.length).toBe(deniedIds.size);
    expect(rows.length).toBeLessThanOrEqual(SIDE_MAX);
    expect([...rows].every((r) => deniedIds.has(r))).toBe(true);
    expect([...maskSide(table[0]!, V, null).rows]).toEqual([...small].sort((a, b) => a - b));
  });

  it('logprobs, entropies and LoRA gradients equal the [N, V] bias path', () => {
    const vars = adapter.variables();
    const run = (maskPath: MaskVia) => {
      const f = () => {
        const r = tokenLogprobs(model, adapter, { inputIds: seqs, masks }, { withEntropy: true, maskPath });
        return tf.add(tf.sum(tf.mul(r.logprobs, tf.linspace(0.5, 1.5, r.logprobs.shape[1]))), tf.mul(0.3, tf.sum(r.entropy!))) as tf.Scalar;
      };
      const out = tf.tidy(() => {
        const r = tokenLogprobs(model, adapter, { inputIds: seqs, masks }, { withEntropy: true, maskPath });
        return { lp: r.logprobs.arraySync().flat(), ent: r.entropy!.arraySync().flat() };
      });
      const { value, grads } = tf.variableGrads(f, vars);
      const g = vars.flatMap((v) => Array.from(grads[v.name]!.dataSync()));
      tf.dispose([value, ...Object.values(grads)]);
      return { ...out, g };
    };
    const maxDiff = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));
    const [ref, sparse] = [run('gather'), run('sparse')];
    expect(maxDiff(sparse.lp, ref.lp)).toBeLessThan(1e-5);
    expect(maxDiff(sparse.ent, ref.ent)).toBeLessThan(1e-5);
    const gMax = Math.max(...ref.g.map(Math.abs));
    expect(gMax).toBeGreaterThan(1e-4);
    expect(maxDiff(sparse.g, ref.g)).toBeLessThan(1e-6 * Math.max(1, gMax));
    // the masks matter at every masked column: unmasked scoring differs there
    const raw = tf.tidy(() => tokenLogprobs(model, adapter, { inputIds: seqs }).logprobs.arraySync().flat());
    const masked = seqs.flatMap((s, b) => s.map((_, t) => (masks[b]!.index[t]! >= 0 ? 1 : 0)));
    expect(Math.min(...masked.flatMap((m, i) => (m ? [sparse.lp[i]! - raw[i]!] : [])))).toBeGreaterThan(0);
  }, 180_000 /* the gather path at 151,936 ids on cpu: ~15 s alone, minutes on a loaded 2-core machine */);
});
