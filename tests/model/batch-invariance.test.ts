// What the tfjs backends guarantee for batched rows, bit for bit (serve/README.md "Batch
// invariance", serve/batch-invariance.ts). These are findings about the kernels, checked on
// random inputs: a failure means a tfjs upgrade changed a kernel and the README (and maybe
// the batch-step design) must be revisited.
//   - row i of x [M, K] @ W [K, N] does not depend on M (M = 1..16) at the tiny-demo model's
//     and the Qwen3-0.6B shape's K/N, on the XNNPACK path (2-D, no transpose) and on the
//     scalar path (transposed B, the LoRA A factor);
//   - a row mean (RMSNorm) does not depend on the row count;
//   - softmax over a row with masked (-1e9) trailing keys: NOT the unpadded row's bits on wasm
//     (XNNPACK sums in SIMD groups), the same bits on cpu; exp / sum in order is the same on both;
//   - P @ V with zero-padded trailing keys (exact zeros added in order) is the same on both.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { selectBackend } from '../../model/backend.ts';
import { Rng } from '../../util/rng.ts';

const sameBits = (a: ArrayLike<number>, b: ArrayLike<number>) => a.length === b.length && Array.from(a).every((v, i) => Object.is(v, b[i]));

function randn(rng: Rng, shape: number[]): tf.Tensor {
  return tf.tensor(
    Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, () => rng.normal()),
    shape,
  );
}

/** Rows (of M = ms) of f(x[:M]) that differ from f(x[i:i+1]) computed alone. */
function rowsThatDiffer(rng: Rng, K: number, N: number, f: (x: tf.Tensor) => tf.Tensor, ms: number[]): number {
  return tf.tidy(() => {
    const x = randn(rng, [16, K]);
    const alone = Array.from({ length: 16 }, (_, i) => f(tf.slice(x, [i, 0], [1, K])).dataSync());
    let bad = 0;
    for (const M of ms) {
      const out = f(tf.slice(x, [0, 0], [M, K])).dataSync();
      for (let i = 0; i < M; i++) if (!sameBits(out.subarray(i * N, (i + 1) * N), alone[i] as Float32Array)) bad++;
    }
    return bad;
  });
}

const ALL_M = Array.from({ length: 16 }, (_, i) => i + 1);
// [K, N] of the projections and lm_head: models/tiny-demo (D 64, F 192, 3,062 kept rows), Qwen3-0.6B (D 1024, q 2048, kv 1024, F 3072)
const TINY_SHAPES = [
  [64, 64],
  [64, 32],
  [64, 192],
  [192, 64],
  [64, 3062],
] as const;
const QWEN_06B_SHAPES = [
  [1024, 2048],
  [1024, 1024],
  [2048, 1024],
  [1024, 3072],
  [3072, 1024],
] as const;

for (const backend of ['wasm', 'cpu'] as const) {
  describe(`tfjs ${backend}: batched rows`, () => {
    it('matMul: row i of [M,K] x [K,N] is the same for M = 1..16 (XNNPACK / plain path, and transposed B)', async () => {
      await selectBackend(backend, () => {});
      const rng = new Rng(3);
      // cpu is ~10x slower (method §14.1): the 0.6B shapes on a few M there
      const bigMs = backend === 'cpu' ? [1, 3, 16] : ALL_M;
      for (const [shapes, ms] of [
        [TINY_SHAPES, ALL_M],
        [QWEN_06B_SHAPES, bigMs],
      ] as const) {
        for (const [K, N] of shapes) {
          const W = randn(rng, [K, N]);
          const A = randn(rng, [8, K]); // a LoRA A factor [r, in], used as x A^T
          expect(rowsThatDiffer(rng, K, N, (x) => tf.matMul(x, W), ms)).toBe(0);
          expect(rowsThatDiffer(rng, K, 8, (x) => tf.matMul(x, A, false, true), ms)).toBe(0);
          W.dispose();
          A.dispose();
        }
      }
    });

    it('a row mean (RMSNorm) is the same for any row count', async () => {
      await selectBackend(backend, () => {});
      expect(rowsThatDiffer(new Rng(4), 1024, 1, (x) => tf.mean(tf.square(x), -1, true), ALL_M)).toBe(0);
    });

    it(`softmax over masked trailing keys: ${backend === 'wasm' ? 'NOT' : 'the same as'} the unpadded row; exp/sum in order and P @ V with zero keys: the same`, async () => {
      await selectBackend(backend, () => {});
      const rng = new Rng(5);
      let softmaxDiffers = 0;
      let expSumDiffers = 0;
      let pvDiffers = 0;
      let cases = 0;
      const expSum = (t: tf.Tensor) => {
        const e = tf.exp(tf.sub(t, tf.max(t, -1, true)));
        return tf.div(e, tf.sum(e, -1, true));
      };
      tf.tidy(() => {
        for (let L = 1; L <= 40; L += 3) {
          for (const pad of [1, 2, 3, 5, 8, 13, 31]) {
            cases++;
            const row = randn(rng, [1, L]);
            const padded = tf.concat([row, tf.fill([1, pad], -1e9)], 1);
            const cut = (t: tf.Tensor) => t.dataSync().subarray(0, L);
            if (!sameBits(tf.softmax(row).dataSync(), cut(tf.softmax(padded)))) softmaxDiffers++;
            if (!sameBits(expSum(row).dataSync(), cut(expSum(padded)))) expSumDiffers++;
            // probabilities [2 kv heads, 4 rows, L] against values [2, L, 16], then with `pad` zero keys
            const P = tf.softmax(randn(rng, [2, 4, L]));
            const V = randn(rng, [2, L, 16]);
            const Pp = tf.concat([P, tf.zeros([2, 4, pad])], 2);
            const Vp = tf.concat([V, tf.zeros([2, pad, 16])], 1);
            if (!sameBits(tf.matMul(P, V).dataSync(), tf.matMul(Pp, Vp).dataSync())) pvDiffers++;
            const P2 = tf.reshape(tf.slice(P, [0, 0, 0], [1, 4, L]), [4, L]);
            const V2 = tf.reshape(tf.slice(V, [0, 0, 0], [1, L, 16]), [L, 16]);
            if (!sameBits(tf.matMul(P2, V2).dataSync(), tf.matMul(tf.concat([P2, tf.zeros([4, pad])], 1), tf.concat([V2, tf.zeros([pad, 16])], 0)).dataSync()))
              pvDiffers++;
          }
        }
      });
      if (backend === 'wasm') expect(softmaxDiffers).toBeGreaterThan(cases / 10);
      else expect(softmaxDiffers).toBe(0);
      expect(expSumDiffers).toBe(0);
      expect(pvDiffers).toBe(0);
    });
  });
}
