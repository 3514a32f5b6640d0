// The clipped value loss of PPO's critic (verl core_algos.compute_value_loss, after TRL's
// PPO trainer), token-mean over the mask (verl's default loss_agg_mode):
//   V_clip   = clip(V_new, V_old - eps_v, V_old + eps_v)        eps_v = cliprangeValue (0.5)
//   loss_t   = max((V_new - G)^2, (V_clip - G)^2)
//   vf_loss  = 0.5 * masked_mean(loss_t)
//   vf_clipfrac = masked_mean[(V_clip - G)^2 > (V_new - G)^2]   (share of tokens where the clipped term won)
// V_old are the values the returns were computed with (the critic at rollout time).
import { assertShapes, maskedMean, type Matrix } from './masked.ts';

export interface ValueLoss {
  vf_loss: number;
  vf_clipfrac: number;
}

export function clippedValueLoss(
  vpreds: Matrix /* [B, T] */,
  oldValues: Matrix /* [B, T] */,
  returns: Matrix /* [B, T] */,
  mask: Matrix /* [B, T] */,
  cliprangeValue: number,
): ValueLoss {
  assertShapes(mask, vpreds, oldValues, returns);
  const losses: Matrix = []; // [B, T]
  const clipped: Matrix = []; // [B, T] 1 where the clipped term is larger
  vpreds.forEach((row, i) => {
    const l: number[] = [];
    const c: number[] = [];
    row.forEach((v, t) => {
      const old = (oldValues[i] as number[])[t] as number;
      const g = (returns[i] as number[])[t] as number;
      const vClip = Math.min(old + cliprangeValue, Math.max(old - cliprangeValue, v));
      const unclippedLoss = (v - g) ** 2;
      const clippedLoss = (vClip - g) ** 2;
      l.push(Math.max(unclippedLoss, clippedLoss));
      c.push(clippedLoss > unclippedLoss ? 1 : 0);
    });
    losses.push(l);
    clipped.push(c);
  });
  return { vf_loss: 0.5 * maskedMean(losses, mask), vf_clipfrac: maskedMean(clipped, mask) };
}
