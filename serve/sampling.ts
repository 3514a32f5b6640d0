// Token sampling from one position's logits, and the logprobs the server reports.
//
// Sampling follows Hugging Face / vLLM order: logits / temperature -> top-k -> top-p
// (the smallest set of most likely tokens whose probability reaches top_p; the token that
// crosses the threshold is kept) -> one draw from the request's own Rng. temperature 0 is
// greedy (argmax, lowest id on ties).
//
// The REPORTED logprob of a token is log_softmax of the RAW logits (temperature 1, no top-k
// or top-p), i.e. exactly what the trainer's `tokenLogprobs` computes for the same ids, so
// the GRPO ratio exp(logp_theta - logp_old) starts at 1 (SPEC §5). vLLM's V1 engine returns
// raw logprobs too (`--logprobs-mode raw_logprobs`, its default); its V0 engine and the
// `processed_logprobs` mode report them after temperature/penalties instead, which would
// bias the ratio whenever temperature != 1, so a vLLM run must keep the raw mode.
import type { Rng } from '../util/rng.ts';

export interface SamplingParams {
  temperature: number; // >= 0; 0 = greedy
  topP: number; // (0, 1]
  topK: number; // <= 0 = off
}

/**
 * The ids a distribution can give, ascending: those with a finite logit. A trimmed-vocab
 * model returns [V] logits with a few hundred finite entries; every loop below runs over
 * this list instead of all V (same results, ~500x less work on the tiny model).
 */
export function finiteIds(logits: Float32Array): Int32Array {
  const out: number[] = [];
  for (let i = 0; i < logits.length; i++) if ((logits[i] as number) > -Infinity) out.push(i);
  return Int32Array.from(out);
}

/** log Z = logsumexp over the finite logits, so logprob(i) = logits[i] - logZ. */
export function logSumExp(logits: Float32Array, ids: Int32Array = finiteIds(logits)): number {
  let max = -Infinity;
  for (const i of ids) if ((logits[i] as number) > max) max = logits[i] as number;
  if (max === -Infinity) return -Infinity;
  let sum = 0;
  for (const i of ids) sum += Math.exp((logits[i] as number) - max);
  return max + Math.log(sum);
}

/** Highest logit, lowest id on ties. */
export function argmax(logits: Float32Array, ids: Int32Array = finiteIds(logits)): number {
  let best = ids[0] ?? 0;
  for (const i of ids) if ((logits[i] as number) > (logits[best] as number)) best = i;
  return best;
}

/** Candidates sorted by weight, heaviest first (ties: lower id first). */
function sortedCandidates(ids: number[], w: Map<number, number>): number[] {
  return ids.sort((a, b) => (w.get(b) as number) - (w.get(a) as number) || a - b);
}

interface Weights {
  ids: Int32Array; // [S] support, ascending
  w: Float64Array; // [S] exp((l - max) / T): softmax numerators at temperature T, float64
  total: number;
}

function weights(logits: Float32Array, temperature: number, ids: Int32Array): Weights {
  const maxLogit = logits[argmax(logits, ids)] as number;
  const w = new Float64Array(ids.length);
  let total = 0;
  ids.forEach((id, s) => {
    const v = Math.exp(((logits[id] as number) - maxLogit) / temperature);
    w[s] = v;
    total += v;
  });
  return { ids, w, total };
}

/**
 * The ids top-k then top-p keep, heaviest first. Only ids with weight >= a cut-off are
 * sorted: when the mass at or above the cut-off already reaches topP * total, no lighter id
 * can be in the nucleus, so the tail is skipped without changing the result.
 */
function nucleus({ ids, w, total }: Weights, p: SamplingParams): { kept: number[]; weight: Map<number, number> } {
  const cut = 1e-6; // weights are relative to the max, which is 1
  let massAbove = 0;
  for (const v of w) if (v >= cut) massAbove += v;
  // topP 1 keeps every id with weight > 0, even one whose weight vanishes next to the
  // total in float64 (e.g. 3e-17 at temperature 0.05), so no cut-off then
  const lowest = p.topK > 0 || p.topP >= 1 || massAbove < p.topP * total ? Number.MIN_VALUE : cut;
  const weight = new Map<number, number>();
  ids.forEach((id, s) => {
    if ((w[s] as number) >= lowest) weight.set(id, w[s] as number);
  });
  let kept = sortedCandidates([...weight.keys()], weight);
  if (p.topK > 0) kept = kept.slice(0, p.topK);
  if (p.topP >= 1) return { kept, weight };
  // top-p renormalizes over what top-k kept (HF order); without top-k that is all the mass,
  // including the tail the cut-off skipped.
  const keptTotal = p.topK > 0 ? kept.reduce((s, i) => s + (weight.get(i) as number), 0) : total;
  let cum = 0;
  for (let n = 0; n < kept.length; n++) {
    cum += weight.get(kept[n] as number) as number;
    if (cum >= p.topP * keptTotal) return { kept: kept.slice(0, n + 1), weight };
  }
  return { kept, weight };
}

/** The ids a draw can return under `p` (temperature > 0), heaviest first. For tests and docs. */
export function nucleusIds(logits: Float32Array, p: SamplingParams): number[] {
  return nucleus(weights(logits, p.temperature, finiteIds(logits)), p).kept;
}

/** Draw one id from `logits` [V] with the request's sampling parameters and Rng. */
export function sampleToken(logits: Float32Array, p: SamplingParams, rng: Rng, ids: Int32Array = finiteIds(logits)): number {
  if (p.temperature === 0) return argmax(logits, ids);
  const wt = weights(logits, p.temperature, ids);
  if (p.topP < 1 || p.topK > 0) {
    const { kept, weight } = nucleus(wt, p);
    let u = rng.next() * kept.reduce((s, i) => s + (weight.get(i) as number), 0);
    for (const i of kept) if ((u -= weight.get(i) as number) < 0) return i;
    return kept[kept.length - 1] as number; // u landed on rounding error at the end
  }
  let u = rng.next() * wt.total;
  let last = ids[0] as number;
  for (let s = 0; s < ids.length; s++) {
    if ((wt.w[s] as number) === 0) continue;
    last = ids[s] as number;
    if ((u -= wt.w[s] as number) < 0) return last;
  }
  return last;
}

export interface TokenLogprob {
  id: number;
  logprob: number;
}

/** The k most likely ids under the raw distribution (ties: lower id first), O(S k). */
export function topLogprobs(logits: Float32Array, logZ: number, k: number, ids: Int32Array = finiteIds(logits)): TokenLogprob[] {
  const top: number[] = [];
  const better = (a: number, b: number) => (logits[a] as number) > (logits[b] as number) || (logits[a] === logits[b] && a < b);
  for (const i of ids) {
    if (k <= 0) break;
    if (top.length === k && !better(i, top[k - 1] as number)) continue;
    let at = top.length === k ? k - 1 : top.length;
    while (at > 0 && better(i, top[at - 1] as number)) at--;
    top.splice(at, 0, i);
    if (top.length > k) top.pop();
  }
  return top.map((id) => ({ id, logprob: (logits[id] as number) - logZ }));
}
