// Two ops with hand-written gradients for the output head (method §14.1: avoid many small ops
// and slow kernels on the wasm/cpu backends).
import * as tf from '@tensorflow/tfjs';

/**
 * logsumexp over the last axis of x [N, V] -> [N], with gradient dy * softmax(x).
 * tf.logSumExp also differentiates through its internal max (an Equal over [N, V] that
 * costs more than the matmul on wasm); the max is a constant shift, so its gradient is 0.
 */
export const logSumExpRows = tf.customGrad((...args: unknown[]) => {
  const save = args.pop() as tf.GradSaveFunc;
  const x = args[0] as tf.Tensor2D;
  const mx = tf.max(x, -1, true); // [N, 1]
  const value = tf.add(tf.log(tf.sum(tf.exp(tf.sub(x, mx)), -1)), tf.reshape(mx, [-1])); // [N]
  save([x, value]);
  return {
    value,
    gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
      const [sx, lse] = saved as [tf.Tensor2D, tf.Tensor1D];
      return [tf.mul(tf.exp(tf.sub(sx, tf.expandDims(lse, -1))), tf.expandDims(dy as tf.Tensor, -1))];
    },
  };
}) as (x: tf.Tensor2D) => tf.Tensor1D;

/**
 * h [N, D] @ Wt [D, V] whose input gradient dy @ W uses the untransposed W [V, D] we
 * already hold (the embedding, when tied) instead of a transposeB matmul (3-4x slower on
 * wasm). Only h gets a gradient: the head is frozen.
 */
export function headMatMul(h: tf.Tensor2D, Wt: tf.Tensor2D, W: tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((...args: unknown[]) => {
    args.pop();
    const x = args[0] as tf.Tensor2D;
    return {
      value: tf.matMul(x, Wt),
      gradFunc: (dy: tf.Tensor | tf.Tensor[]) => [tf.matMul(dy as tf.Tensor2D, W)],
    };
  }) as (x: tf.Tensor2D) => tf.Tensor2D;
  return f(h);
}

/**
 * Rows `at` of the head only: h [N, D] @ lmHeadT[:, at] [D, K] -> [N, K], gradient dy @ embed[at]
 * (tied head; only h gets one). The gathers run inside the custom op, off the gradient tape: a
 * tf.gather on the tape saves its input for a gradient nobody needs, and a saved tensor is a
 * copy on wasm (39 MB a call for a 151,936 x 64 head).
 */
export function headRowsMatMul(h: tf.Tensor2D, lmHeadT: tf.Tensor2D, embed: tf.Tensor2D, at: Int32Array): tf.Tensor2D {
  const f = tf.customGrad((...args: unknown[]) => {
    const save = args.pop() as tf.GradSaveFunc;
    const x = args[0] as tf.Tensor2D;
    const idx = tf.tensor1d(at, 'int32');
    save([tf.gather(embed, idx)]); // [K, D]
    return {
      value: tf.matMul(x, tf.gather(lmHeadT, idx, 1) as tf.Tensor2D), // [N, K]
      gradFunc: (dy: tf.Tensor | tf.Tensor[], [W]: tf.Tensor[]) => [tf.matMul(dy as tf.Tensor2D, W as tf.Tensor2D)],
    };
  }) as (x: tf.Tensor2D) => tf.Tensor2D;
  return f(h);
}

/** Rows (axis 0) or columns (axis 1) `at` of a frozen tensor, off the gradient tape (headRowsMatMul: no copy saved). */
export function frozenGather(x: tf.Tensor, at: Int32Array | tf.Tensor1D, axis = 0): tf.Tensor {
  const f = tf.customGrad((...args: unknown[]) => {
    args.pop();
    const xi = args[0] as tf.Tensor;
    return { value: tf.gather(xi, at instanceof tf.Tensor ? at : tf.tensor1d(at, 'int32'), axis), gradFunc: () => [tf.zeros(xi.shape)] };
  }) as (x: tf.Tensor) => tf.Tensor;
  return f(x);
}

/**
 * Rows idx of x [M, ...] -> [N, ...], with gradient scattered back into [M, ...]. tf.gather's
 * own gradient is an UnsortedSegmentSum, which the wasm backend does not have; a ScatterNd
 * (which it has) is the exact adjoint: it sums the updates of repeated indices (cpu and wasm
 * both; a shared prefix row read by several sequences gets the sum of their gradients).
 */
export function gatherRows(x: tf.Tensor, idx: Int32Array): tf.Tensor {
  const f = tf.customGrad((...args: unknown[]) => {
    const save = args.pop() as tf.GradSaveFunc;
    const xi = args[0] as tf.Tensor;
    const at = tf.tensor1d(idx, 'int32');
    save([at]); // tensors made here are freed after the forward unless saved
    return {
      value: tf.gather(xi, at),
      gradFunc: (dy: tf.Tensor | tf.Tensor[], [sat]: tf.Tensor[]) => [tf.scatterND(tf.reshape(sat!, [idx.length, 1]), dy as tf.Tensor, xi.shape)],
    };
  }) as (x: tf.Tensor) => tf.Tensor;
  return f(x);
}

/** x [N, ...] placed at distinct rows idx of a zero [M, ...] tensor; gradient = gather (gatherRows' adjoint). */
export function scatterRows(x: tf.Tensor, idx: Int32Array, M: number): tf.Tensor {
  const f = tf.customGrad((...args: unknown[]) => {
    const save = args.pop() as tf.GradSaveFunc;
    const xi = args[0] as tf.Tensor;
    const at = tf.tensor1d(idx, 'int32');
    save([at]);
    return {
      value: tf.scatterND(tf.reshape(at, [idx.length, 1]), xi, [M, ...xi.shape.slice(1)]),
      gradFunc: (dy: tf.Tensor | tf.Tensor[], [sat]: tf.Tensor[]) => [tf.gather(dy as tf.Tensor, sat!)],
    };
  }) as (x: tf.Tensor) => tf.Tensor;
  return f(x);
}
