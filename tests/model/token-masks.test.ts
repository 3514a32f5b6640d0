// Scoring constrained turns under the mask they were sampled with (model/token-masks.ts):
// masked logprobs and entropies equal a reference built from the raw distribution (every
// candidate id scored on its own, then renormalised over the allowed ids in float64), the
// masked log-softmax's LoRA gradient matches finite differences, and unconstrained rows are
// scored bit for bit as before.
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../model/backend.ts';
import { loadPeftAdapter } from '../../model/lora/peft.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import { loadModel, tokenLogprobs, type Qwen3Model } from '../../model/index.ts';
import { COMPLEMENT_MAX } from '../../model/masked-head.ts';
import { MASKED_LOGIT, tableRows, type MaskVia, type TokenMasks } from '../../model/token-masks.ts';
import { InputError } from '../../util/errors.ts';
import { Rng } from '../../util/rng.ts';

const bitmask = (ids: Iterable<number>, vocab: number): Int32Array => {
  const m = new Int32Array(Math.ceil(vocab / 32));
  for (const id of ids) m[id >> 5]! |= 1 << (id & 31);
  return m;
};

/** Every id the model can emit (kept ids of a trimmed model, else 0..V-1). */
const emittable = (model: Qwen3Model): number[] => (model.vocab ? Array.from(model.vocab.keptIds) : [...Array(model.config.vocabSize).keys()]);

/** Raw log p(v | seq[<t]) for every emittable v, in float64, each candidate scored as its own sequence. */
function rawDistribution(model: Qwen3Model, adapter: LoraAdapter | null, seq: number[], t: number): Map<number, number> {
  const ids = emittable(model);
  const lp = tf.tidy(() => tokenLogprobs(model, adapter, { inputIds: ids.map((v) => [...seq.slice(0, t), v]) }).logprobs.arraySync());
  return new Map(ids.map((v, i) => [v, lp[i]![t]!]));
}

/** Reference masked logprob and entropy at position t from the raw distribution. */
function reference(raw: Map<number, number>, allowed: Set<number>, target: number): { logp: number; entropy: number } {
  const kept = [...raw].filter(([v]) => allowed.has(v));
  const max = Math.max(...kept.map(([, l]) => l));
  const logZ = max + Math.log(kept.reduce((s, [, l]) => s + Math.exp(l - max), 0));
  const entropy = -kept.reduce((s, [, l]) => s + Math.exp(l - logZ) * (l - logZ), 0);
  return { logp: raw.get(target)! - logZ, entropy };
}

for (const fixture of ['tiny', 'gqa'] as const) {
  describe(`masked scoring on the ${fixture} fixture (${fixture === 'tiny' ? 'trimmed vocabulary, tied head' : 'full vocabulary'})`, () => {
    let model: Qwen3Model;
    let adapter: LoraAdapter;
    let seqs: number[][];
    let masks: TokenMasks[];
    let allowedAt: Set<number>[][]; // [b][t]
    beforeAll(async () => {
      await selectBackend('cpu', () => {});
      const dir = join(import.meta.dirname, '../reference/fixtures', fixture);
      model = await loadModel(dir);
      adapter = loadPeftAdapter(join(dir, 'adapter'), model);
      const ids = emittable(model);
      const rng = new Rng(5);
      const pick = () => ids[Math.floor(rng.next() * ids.length)]!;
      seqs = [Array.from({ length: 7 }, pick), Array.from({ length: 5 }, pick)];
      // Two distinct masks per sequence (a small set and a large one), each holding the
      // sampled token; column 0 and the first prompt positions unmasked (-1).
      allowedAt = seqs.map((s) => s.map(() => new Set<number>()));
      masks = seqs.map((s, b) => {
        const small = new Set([...s.filter((_, t) => t % 2 === 1), ...ids.filter((_, i) => i % 7 === b)]);
        const large = new Set(ids.filter((_, i) => i % 3 !== 0).concat(s.slice(2)));
        const index = s.map((_, t) => (t < 2 ? -1 : t % 2 === 0 ? 1 : 0));
        index.forEach((k, t) => (allowedAt[b]![t] = k === 0 ? small : large));
        if (![...Array(s.length).keys()].every((t) => index[t]! < 0 || allowedAt[b]![t]!.has(s[t]!))) throw new Error('bad fixture');
        return { table: [bitmask(small, model.config.vocabSize), bitmask(large, model.config.vocabSize)], index };
      });
    });
    afterAll(() => {
      adapter.dispose();
      model.dispose();
    });

    it("logprobs and entropies equal the raw distribution renormalised over each position's allowed ids", () => {
      // the bias path and the sparse one (the small mask on its allowed side, the large one on its complement)
      const outs = (['gather', 'sparse'] as const).map((maskPath) =>
        tf.tidy(() => {
          const r = tokenLogprobs(model, adapter, { inputIds: seqs, masks }, { withEntropy: true, maskPath });
          return { lp: r.logprobs.arraySync(), ent: r.entropy!.arraySync() };
        }),
      );
      seqs.forEach((s, b) => {
        for (let t = 2; t < s.length; t++) {
          const ref = reference(rawDistribution(model, adapter, s, t), allowedAt[b]![t]!, s[t]!);
          for (const out of outs) {
            expect(Math.abs(out.lp[b]![t]! - ref.logp)).toBeLessThan(1e-5);
            expect(Math.abs(out.ent[b]![t]! - ref.entropy)).toBeLessThan(1e-5);
          }
        }
      });
    }, 300_000 /* ~3,000 sequences scored one by one: minutes on a loaded 2-core machine */);

    it('masking removes mass exactly where the mask drops ids: masked >= raw, equal for an all-allowed mask', () => {
      const all = bitmask(emittable(model), model.config.vocabSize);
      const everything = seqs.map((s) => ({ table: [all], index: s.map((_, t) => (t === 0 ? -1 : 0)) }));
      const [raw, full, masked] = tf.tidy(() =>
        [undefined, everything, masks].map((m) => tokenLogprobs(model, adapter, { inputIds: seqs, masks: m }).logprobs.arraySync()),
      );
      seqs.forEach((s, b) => {
        for (let t = 1; t < s.length; t++) {
          expect(full![b]![t]).toBe(raw![b]![t]); // + 0 bias everywhere: the same numbers
          if (t < 2) expect(masked![b]![t]).toBe(raw![b]![t]);
          else expect(masked![b]![t]!).toBeGreaterThan(raw![b]![t]!); // each mask drops some mass
        }
      });
    });

    it('unconstrained rows of a mixed batch are scored bit for bit as without masks', () => {
      const [plain, mixed] = tf.tidy(() =>
        [undefined, [null, masks[1]!]].map((m) => tokenLogprobs(model, adapter, { inputIds: seqs, masks: m }, { withEntropy: true }).logprobs.arraySync()),
      );
      expect(mixed![0]).toEqual(plain![0]);
      expect(mixed![1]).not.toEqual(plain![1]);
    });

    it('the masked log-softmax LoRA gradient matches central finite differences', () => {
      const w = seqs.map((s, b) => s.map((_, t) => Math.cos(1 + 3 * b + t)));
      const loss = () =>
        tf.tidy(() => {
          const { logprobs, entropy } = tokenLogprobs(model, adapter, { inputIds: seqs, masks }, { withEntropy: true });
          const pad = (rows: number[][]) => tf.tensor2d(rows.map((r) => [...r, ...new Array(7 - r.length).fill(0)]));
          return tf.add(tf.sum(tf.mul(logprobs, pad(w))), tf.mul(0.3, tf.sum(tf.mul(entropy!, pad(seqs.map((s) => s.map(() => 1))))))) as tf.Scalar;
        });
      const vars = adapter.variables();
      const { value, grads } = tf.variableGrads(loss, vars);
      const g = vars.map((v) => grads[v.name]!.dataSync() as Float32Array);
      tf.dispose([value, ...Object.values(grads)]);
      const rng = new Rng(9);
      const dirs = g.map((x) => Float32Array.from(x, (v) => v + 0.5 * rng.normal() * Math.abs(v)));
      const norm = Math.sqrt(dirs.reduce((s, d) => s + d.reduce((a, v) => a + v * v, 0), 0));
      const originals = vars.map((v) => v.dataSync().slice() as Float32Array);
      const eps = 1e-2;
      const at = (sign: number) => {
        tf.tidy(() =>
          vars.forEach((v, i) =>
            v.assign(
              tf.tensor(
                originals[i]!.map((x, k) => x + (sign * eps * dirs[i]![k]!) / norm),
                v.shape,
              ),
            ),
          ),
        );
        const l = loss();
        const out = l.dataSync()[0]!;
        l.dispose();
        return out;
      };
      const fd = (at(1) - at(-1)) / (2 * eps);
      tf.tidy(() => vars.forEach((v, i) => v.assign(tf.tensor(originals[i]!, v.shape))));
      const analytic = g.reduce((s, gi, i) => s + gi.reduce((a, x, k) => a + (x * dirs[i]![k]!) / norm, 0), 0);
      expect(Math.abs(analytic)).toBeGreaterThan(0.05);
      expect(Math.abs(fd - analytic) / Math.abs(analytic)).toBeLessThan(1e-2);
    });

    it('the [N, V] bias by a one-hot matmul, and no bias (sparse) == the bias by a gather: logprobs, entropies, LoRA gradients', () => {
      // a third sequence sharing a mask with the first (merged across sequences) and an unmasked one
      const inputIds = [...seqs, seqs[0]!.slice(0, 6), seqs[1]!];
      const all = [...masks, { table: [masks[0]!.table[1]!], index: [-1, -1, 0, -1, 0, -1] }, null];
      const scored = inputIds.map((s) => s.map((_, t) => (t % 3 === 1 ? 0 : 1)));
      const vars = adapter.variables();
      const run = (maskPath: MaskVia, withScored: boolean) => {
        const f = () => {
          const r = tokenLogprobs(model, adapter, { inputIds, masks: all, ...(withScored ? { scored } : {}) }, { withEntropy: true, maskPath });
          return tf.add(tf.sum(tf.mul(r.logprobs, tf.linspace(0.5, 1.5, r.logprobs.shape[1]))), tf.mul(0.3, tf.sum(r.entropy!))) as tf.Scalar;
        };
        const out = tf.tidy(() => {
          const r = tokenLogprobs(model, adapter, { inputIds, masks: all, ...(withScored ? { scored } : {}) }, { withEntropy: true, maskPath });
          return { lp: r.logprobs.arraySync(), ent: r.entropy!.arraySync() };
        });
        const { value, grads } = tf.variableGrads(f, vars);
        const g = vars.map((v) => Array.from(grads[v.name]!.dataSync()));
        tf.dispose([value, ...Object.values(grads)]);
        return { ...out, g };
      };
      const maxDiff = (a: number[][], b: number[][]) => Math.max(...a.flatMap((r, i) => r.map((x, j) => Math.abs(x - b[i]![j]!))));
      for (const withScored of [false, true]) {
        const ref = run('gather', withScored);
        expect(Math.max(...ref.g.flat().map(Math.abs))).toBeGreaterThan(1e-4); // the gradients are not all zero
        for (const [path, tol] of [
          ['matmul', 1e-6],
          ['sparse', 1e-5],
        ] as const) {
          const other = run(path, withScored);
          expect(maxDiff(other.lp, ref.lp)).toBeLessThan(tol);
          expect(maxDiff(other.ent, ref.ent)).toBeLessThan(tol);
          // gradients (sums over positions, up to ~80 here) to float32 rounding: relative to the largest
          expect(maxDiff(other.g, ref.g)).toBeLessThan(1e-6 * Math.max(1, ...ref.g.flat().map(Math.abs)));
          // and the masks matter: unmasked scoring differs
          const raw = tf.tidy(() => tokenLogprobs(model, adapter, { inputIds }).logprobs.arraySync());
          expect(maxDiff(raw, other.lp)).toBeGreaterThan(1e-3);
        }
      }
    });

    it('sparse: a position whose disallowed ids hold most of the raw mass goes the dense way, with the same values', () => {
      // Allow every id but the most likely ~40% at position t (complement side: more than half allowed),
      // keeping the sampled token: the removed raw mass x is well above COMPLEMENT_MAX.
      const s = seqs[0]!;
      const t = 4;
      const raw = rawDistribution(model, adapter, s, t);
      const ranked = [...raw].sort((a, b) => b[1] - a[1]).map(([v]) => v);
      const denied = new Set(ranked.filter((v) => v !== s[t]).slice(0, Math.floor(0.4 * ranked.length)));
      const removed = [...denied].reduce((sum, v) => sum + Math.exp(raw.get(v)!), 0);
      expect(removed).toBeGreaterThan(COMPLEMENT_MAX);
      const mask = bitmask(
        emittable(model).filter((v) => !denied.has(v)),
        model.config.vocabSize,
      );
      const m: TokenMasks = { table: [mask, masks[0]!.table[1]!], index: s.map((_, i) => (i === t ? 0 : i === 2 ? 1 : -1)) };
      const run = (maskPath: MaskVia) => {
        const f = () => tf.sum(tokenLogprobs(model, adapter, { inputIds: [s], masks: [m] }, { withEntropy: true, maskPath }).logprobs) as tf.Scalar;
        const lp = tf.tidy(() => tokenLogprobs(model, adapter, { inputIds: [s], masks: [m] }, { withEntropy: true, maskPath }).logprobs.arraySync()[0]!);
        const { value, grads } = tf.variableGrads(f, adapter.variables());
        const g = Object.values(grads).flatMap((x) => Array.from(x.dataSync()));
        tf.dispose([value, ...Object.values(grads)]);
        return { lp, g };
      };
      const [ref, sparse] = [run('gather'), run('sparse')];
      const ref64 = reference(raw, new Set(emittable(model).filter((v) => !denied.has(v))), s[t]!);
      expect(Math.abs(ref.lp[t]! - ref64.logp)).toBeLessThan(1e-5);
      expect(Math.abs(sparse.lp[t]! - ref64.logp)).toBeLessThan(1e-5);
      expect(Math.max(...sparse.lp.map((x, i) => Math.abs(x - ref.lp[i]!)))).toBeLessThan(1e-5);
      expect(Math.max(...sparse.g.map((x, i) => Math.abs(x - ref.g[i]!)))).toBeLessThan(1e-6 * Math.max(1, ...ref.g.map(Math.abs)));
    });

    it('refuses masks that do not hold the sampled token, or that do not fit the batch', () => {
      const s = seqs[0]!;
      const without = bitmask(
        emittable(model).filter((v) => v !== s[4]),
        model.config.vocabSize,
      );
      const bad: TokenMasks = { table: [without], index: s.map((_, t) => (t === 4 ? 0 : -1)) };
      expect(() => tokenLogprobs(model, adapter, { inputIds: [s], masks: [bad] })).toThrow(InputError);
      expect(() => tokenLogprobs(model, adapter, { inputIds: [s], masks: [bad] })).toThrow(/token .* at position 4 is not in its allowed set/);
      expect(() => tokenLogprobs(model, adapter, { inputIds: seqs, masks: [masks[0]!] })).toThrow(/1 entries for 2 sequences/);
      expect(() => tokenLogprobs(model, adapter, { inputIds: [s], masks: [{ table: [without], index: s.map(() => 3) }] })).toThrow(/outside its table/);
    });
  });
}

describe('the [N, rows] bias rows: gather and one-hot matmul give the same bits', () => {
  for (const backend of ['cpu', 'wasm'] as const)
    it(`on ${backend}`, async () => {
      await selectBackend(backend, () => {});
      const rng = new Rng(5);
      const [K, rows, N] = [7, 3001, 40];
      const table = new Float32Array(K * rows).map((_, i) => (i < rows || rng.int(3) ? 0 : MASKED_LOGIT));
      const index = Int32Array.from({ length: N }, () => rng.int(K));
      const [viaGather, viaMatmul] = (['gather', 'matmul'] as const).map((via) =>
        tf.tidy(() =>
          tableRows(tf.tensor2d(table, [K, rows]), index, via)
            .dataSync()
            .slice(),
        ),
      );
      expect(Buffer.from(viaMatmul!.buffer).equals(Buffer.from(viaGather!.buffer))).toBe(true);
      // and the rows are the table's: spot-check against the table itself
      for (const n of [0, 17, N - 1])
        expect(Array.from(viaGather!.subarray(n * rows, (n + 1) * rows))).toEqual(Array.from(table.subarray(index[n]! * rows, (index[n]! + 1) * rows)));
    });
});
