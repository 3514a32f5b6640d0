// Tinker's built-in losses (method §5.13), exactly as tinker-docs.thinkingmachines.ai/losses
// defines them: per-token (elementwise) losses whose SUM over every token of every datum is the
// loss; no mean, no normalizer (a caller puts its aggregation into the advantages or weights).
// With p = target_logprobs (the learner, carries the gradient), q = sampling `logprobs`,
// A = `advantages`, w = `weights`, r = exp(p - q):
//   cross_entropy        -p * w
//   importance_sampling  -r * A
//   ppo                  -min(r * A, clip(r, lo, hi) * A)        lo, hi: clip_low/high_threshold
//   cispo                -sg(clip(r, lo, hi)) * p * A
//   dro                  -(p * A - 0.5 * beta * (p - q)^2)
// Every tensor is the same shape (a datum's [N], or a padded batch [B, T]); positions a batch
// pads are 0 in every input, which gives a loss of exactly 0 there.
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../../util/errors.ts';
import { detach } from '../grpo/detach.ts';
import type { TinkerLossFn } from './types.ts';

export const TINKER_LOSSES: readonly TinkerLossFn[] = ['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro'];

/** loss_fn_inputs each loss reads, besides target_tokens. */
export const LOSS_INPUTS: Record<TinkerLossFn, readonly ('weights' | 'logprobs' | 'advantages')[]> = {
  cross_entropy: ['weights'],
  importance_sampling: ['logprobs', 'advantages'],
  ppo: ['logprobs', 'advantages'],
  cispo: ['logprobs', 'advantages'],
  dro: ['logprobs', 'advantages'],
};

/**
 * loss_fn_config keys and their documented defaults: ppo and cispo clip at 0.8 / 1.2 ("fixed to
 * 0.2" in the losses doc; tutorial 202 names the thresholds); dro documents no default beta, so
 * it must be given (null = required).
 */
export const LOSS_CONFIG: Record<TinkerLossFn, Record<string, number | null>> = {
  cross_entropy: {},
  importance_sampling: {},
  ppo: { clip_low_threshold: 0.8, clip_high_threshold: 1.2 },
  cispo: { clip_low_threshold: 0.8, clip_high_threshold: 1.2 },
  dro: { beta: null },
};

/** The loss's config with defaults filled; unknown keys and missing required ones are errors. */
export function lossConfig(fn: TinkerLossFn, config: Record<string, number> = {}): Record<string, number> {
  const known = LOSS_CONFIG[fn];
  if (!known) throw new InputError(`loss_fn "${String(fn)}" is not one of Tinker's built-in losses (${TINKER_LOSSES.join(', ')})`);
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(config)) {
    if (!(key in known)) throw new InputError(`loss_fn_config.${key} = ${value}: ${fn} reads ${Object.keys(known).join(', ') || 'no config'}; remove the key`);
    if (!Number.isFinite(value)) throw new InputError(`loss_fn_config.${key} = ${value}: must be a finite number`);
  }
  for (const [key, dflt] of Object.entries(known)) {
    const v = config[key] ?? dflt;
    if (v === null) throw new InputError(`loss_fn_config.${key} is missing: ${fn} has no documented default; pass e.g. {"${key}": 0.05}`);
    out[key] = v;
  }
  if (out.clip_low_threshold !== undefined && out.clip_low_threshold > out.clip_high_threshold!)
    throw new InputError(
      `loss_fn_config: clip_low_threshold ${out.clip_low_threshold} is above clip_high_threshold ${out.clip_high_threshold}; the low threshold is below 1, the high above (e.g. 0.8 and 1.2)`,
    );
  return out;
}

export interface LossTensors {
  weights?: tf.Tensor;
  logprobs?: tf.Tensor; // q: sampling logprobs
  advantages?: tf.Tensor;
  /** 1 where p was scored: the ratio is taken there only (elsewhere r = 1, and A = 0 by construction). */
  scored?: tf.Tensor;
}

/** Elementwise loss of `fn` (same shape as p); sum it for Tinker's `loss:sum`. */
export function elementwiseLoss(fn: TinkerLossFn, p: tf.Tensor, x: LossTensors, cfg: Record<string, number>): tf.Tensor {
  const need = (k: keyof LossTensors): tf.Tensor => {
    const t = x[k];
    if (!t) throw new Error(`internal: ${fn} needs loss input ${k}`);
    return t;
  };
  const logRatio = () => (x.scored ? tf.mul(tf.sub(p, need('logprobs')), x.scored) : tf.sub(p, need('logprobs')));
  switch (fn) {
    case 'cross_entropy':
      return tf.neg(tf.mul(p, need('weights')));
    case 'importance_sampling':
      return tf.neg(tf.mul(tf.exp(logRatio()), need('advantages')));
    case 'ppo': {
      const r = tf.exp(logRatio());
      const a = need('advantages');
      return tf.neg(tf.minimum(tf.mul(r, a), tf.mul(tf.clipByValue(r, cfg.clip_low_threshold!, cfg.clip_high_threshold!), a)));
    }
    case 'cispo': {
      const clipped = detach(tf.clipByValue(tf.exp(logRatio()), cfg.clip_low_threshold!, cfg.clip_high_threshold!));
      return tf.neg(tf.mul(tf.mul(clipped, p), need('advantages')));
    }
    case 'dro': {
      const d = tf.sub(p, need('logprobs'));
      return tf.neg(tf.sub(tf.mul(p, need('advantages')), tf.mul(tf.square(d), 0.5 * cfg.beta!)));
    }
    default: {
      const never: never = fn;
      throw new InputError(`loss_fn "${String(never)}" is not one of Tinker's built-in losses (${TINKER_LOSSES.join(', ')})`);
    }
  }
}
