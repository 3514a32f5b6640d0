// Activation recomputation per decoder layer (gradient checkpointing): the forward keeps
// only the layer input; the backward re-runs the layer under a nested tape and
// differentiates it w.r.t. the input and the layer's LoRA tensors. tfjs's customGrad only
// routes gradients to its explicit inputs, so the LoRA tensors are passed as inputs.
import * as tf from '@tensorflow/tfjs';

interface TapeState {
  activeTape: { saved?: tf.Tensor[] }[] | null;
  gradientDepth: number;
}

/**
 * Nested tf.grads inside a customGrad backward. tfjs resets the tape when a gradient
 * starts at depth 0 (which is where an outer backward runs), so we run the inner one one
 * level deeper on the outer tape and then drop (and free) the nodes it appended.
 */
function nestedGrads(f: (...xs: tf.Tensor[]) => tf.Tensor, xs: tf.Tensor[], dy: tf.Tensor): tf.Tensor[] {
  const state = (tf.engine() as unknown as { state: TapeState }).state;
  const tape = state.activeTape;
  if (!tape) return tf.grads(f)(xs, dy);
  const start = tape.length;
  state.gradientDepth++;
  try {
    return tf.grads(f)(xs, dy);
  } finally {
    state.gradientDepth--;
    for (const node of tape.splice(start)) node.saved?.forEach((t) => t.dispose());
  }
}

/**
 * Wrap `layer(x, consts, params) -> y` so its activations are recomputed in the backward.
 * `consts` (rope tables, masks) get no gradient; `params` (LoRA A/B) and x do.
 */
export function recomputed(
  layer: (x: tf.Tensor2D, consts: tf.Tensor[], params: tf.Tensor[]) => tf.Tensor2D,
  x: tf.Tensor2D,
  consts: tf.Tensor[],
  params: tf.Tensor[],
): tf.Tensor2D {
  const nc = consts.length;
  const fn = tf.customGrad((...args: unknown[]) => {
    const save = args.pop() as tf.GradSaveFunc;
    const ts = args as tf.Tensor[];
    const [xi, ...rest] = ts as [tf.Tensor2D, ...tf.Tensor[]];
    const cs = rest.slice(0, nc);
    const ps = rest.slice(nc);
    save([xi, ...cs]); // the layer input and constants survive until the backward
    const value = layer(xi, cs, ps);
    const gradFunc = (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
      const [sx, ...scs] = saved as [tf.Tensor2D, ...tf.Tensor[]];
      const grads = nestedGrads((xx, ...pp) => layer(xx as tf.Tensor2D, scs, pp), [sx, ...ps], dy as tf.Tensor);
      const [gx, ...gp] = grads as [tf.Tensor, ...tf.Tensor[]];
      return [gx, ...scs.map((c) => tf.zerosLike(c)), ...gp];
    };
    return { value, gradFunc };
  });
  return fn(x, ...consts, ...params) as tf.Tensor2D;
}
