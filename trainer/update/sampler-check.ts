// Does the sampler serve the adapter it claims (method §5.13)? Every sampled token carries its
// sampler logprob lq and the version k of the adapter that sampled it. Two checks per update:
//   sampling/sampler_trainer_kl  k3 estimate of KL(sampler || trainer) over every sampled token,
//                                mean of exp(r) - 1 - r, r = lp_trainer - lq (the trainer's adapter
//                                before this update; at lag 0 the same policy: float noise only)
//   stale adapter                a few turns of the newest version k are scored under the
//                                candidates theta_k (claimed), theta_{k-1} (the previous adapter)
//                                and the base model; mse_c = mean (lq - lp_c)^2. The sampler
//                                serves the candidate nearest to it: when that is not theta_k and
//                                is nearer by a factor STALE_FACTOR in mse, the run stops
//                                (verl #7495: a sampler that kept the old weights for two months).
// Candidates the update left indistinguishable (theta_k vs theta_{k-1} closer than the noise) never
// stop the run: `resolvable` says whether the check could tell them apart.
import type { TrainSequence } from './part.ts';

/** How much nearer (in mean squared logprob difference) another candidate must be to call the sampler stale. */
export const STALE_FACTOR = 4;

export class StaleAdapterError extends Error {
  override name = 'StaleAdapterError';
}

/** k3 estimate of KL(sampler || trainer) over the sampled tokens; logprobs [B][T] columns as policyRows lays them. */
export function samplerTrainerKl(batch: readonly TrainSequence[], logprobs: readonly (readonly number[])[]): Record<string, number> {
  let sum = 0;
  let n = 0;
  batch.forEach((s, b) => {
    const P = s.promptIds.length;
    s.oldLogprobs.forEach((lq, j) => {
      const r = logprobs[b]![P + j]! - lq;
      sum += Math.exp(r) - 1 - r;
      n += 1;
    });
  });
  return { 'sampling/sampler_trainer_kl': n ? sum / n : 0 };
}

/** The turns the stale check scores: up to `turns` of the newest sampling version (>= 1), with that version. */
export function checkedTurns(batch: readonly TrainSequence[], turns: number): { version: number; idx: number[] } | null {
  const versions = batch.map((s) => s.policyVersion ?? -1).filter((v) => v >= 1);
  if (!versions.length) return null;
  const version = Math.max(...versions);
  const idx = batch.flatMap((s, b) => (s.policyVersion === version && s.completionIds.length ? [b] : [])).slice(0, turns);
  return idx.length ? { version, idx } : null;
}

export interface Candidate {
  name: 'current' | 'previous' | 'base';
  /** [turn][completion token] logprobs under the candidate. */
  logprobs: number[][];
}

/** mse per candidate against the sampler's logprobs of the checked turns; throws StaleAdapterError when the sampler is clearly another one. */
export function staleVerdict(sampled: number[][], cands: readonly Candidate[], version: number): Record<string, number> {
  const mse = (lp: number[][]) => {
    let s = 0;
    let n = 0;
    lp.forEach((row, i) => row.forEach((x, j) => ((s += (x - sampled[i]![j]!) ** 2), (n += 1))));
    return n ? s / n : 0;
  };
  const m = Object.fromEntries(cands.map((c) => [c.name, mse(c.logprobs)])) as Record<Candidate['name'], number>;
  const current = m.current;
  const nearest = cands.reduce((a, c) => (m[c.name] < m[a.name] ? c : a), cands[0]!);
  // theta_k and theta_{k-1} can be told apart when the update moved the checked tokens by more than the sampler's noise
  const cur = cands.find((c) => c.name === 'current')!.logprobs;
  const prev = cands.find((c) => c.name === 'previous')?.logprobs;
  const moved = prev ? mse(cur.map((r, i) => r.map((x, j) => sampled[i]![j]! + x - prev[i]![j]!))) : 0;
  const out: Record<string, number> = {
    'sampling/stale_check/version': version,
    'sampling/stale_check/mse_current': current,
    ...(m.previous !== undefined ? { 'sampling/stale_check/mse_previous': m.previous } : {}),
    ...(m.base !== undefined ? { 'sampling/stale_check/mse_base': m.base } : {}),
    'sampling/stale_check/resolvable': moved > STALE_FACTOR * Math.min(current, m.previous ?? Infinity) ? 1 : 0,
  };
  if (nearest.name !== 'current' && m[nearest.name] * STALE_FACTOR < current)
    throw new StaleAdapterError(
      `the policy server served a stale adapter: turns sampled as adapter version ${version} match the ${nearest.name === 'base' ? 'base model (no adapter)' : `previous adapter (version ${version - 1})`} ` +
        `(mean squared logprob difference ${m[nearest.name].toExponential(2)}) far better than version ${version} (${current.toExponential(2)}); the sampler did not load the new adapter. ` +
        'Check that it reloads LoRA weights on each update (vLLM: VLLM_ALLOW_RUNTIME_LORA_UPDATING and load_lora_adapter; a remote engine: the sampler path of that version), then gsteer resume the run',
    );
  return out;
}
