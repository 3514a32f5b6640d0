// Token sampling from one position's logits, and the logprobs the server reports.
//
// Sampling follows Hugging Face / vLLM order: logits / temperature -> top-k -> top-p
// (the smallest set of most likely tokens whose probability reaches top_p; the token that
// crosses the threshold is kept) -> one draw from the request's own Rng. temperature 0 is
// greedy (argmax, lowest id on ties).
//
// The REPORTED logprob of a token is log_softmax of the RAW logits (temperature 1, no top-k
// or top-p), i.e. exactly what the trainer's `tokenLogprobs` computes for the same ids, so
// the GRPO ratio exp(logp_theta - logp_old) starts at 1 (method §5). vLLM's V1 engine returns
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
 * model returns [V] logits with a few thousand finite entries; everything below works on
 * the values at these ids, gathered once into a contiguous row [S] (a loop over scattered
 * ids of a [V] array misses the cache at every step: ~4x slower on the tiny model).
 */
export function finiteIds(logits: Float32Array): Int32Array {
  const out: number[] = [];
  for (let i = 0; i < logits.length; i++) if ((logits[i] as number) > -Infinity) out.push(i);
  return Int32Array.from(out);
}

/** logits [V] at ids [S] -> a contiguous row [S]. */
export function gatherRow(logits: Float32Array, ids: Int32Array): Float32Array {
  const row = new Float32Array(ids.length);
  for (let s = 0; s < ids.length; s++) row[s] = logits[ids[s] as number] as number;
  return row;
}

/** The values of `row` (over ascending `ids`) at `sub`, a subsequence of `ids` (e.g. a grammar's allowed ids). */
export function subRow(row: Float32Array, ids: Int32Array, sub: Int32Array): Float32Array {
  const out = new Float32Array(sub.length);
  for (let s = 0, k = 0; k < sub.length && s < ids.length; s++) if (ids[s] === sub[k]) out[k++] = row[s] as number;
  return out;
}

/** log Z = logsumexp of a row, so logprob(s) = row[s] - logZ. */
export function logSumExpRow(row: Float32Array): number {
  let max = -Infinity;
  for (let s = 0; s < row.length; s++) if ((row[s] as number) > max) max = row[s] as number;
  if (max === -Infinity) return -Infinity;
  let sum = 0;
  for (let s = 0; s < row.length; s++) sum += Math.exp((row[s] as number) - max);
  return max + Math.log(sum);
}

/** Position of the highest value, the first one on ties (= the lowest id, ids being ascending). */
function argmaxRow(row: Float32Array): number {
  let best = 0;
  for (let s = 1; s < row.length; s++) if ((row[s] as number) > (row[best] as number)) best = s;
  return best;
}

/** log Z = logsumexp over the finite logits, so logprob(i) = logits[i] - logZ. */
export function logSumExp(logits: Float32Array, ids: Int32Array = finiteIds(logits)): number {
  return logSumExpRow(gatherRow(logits, ids));
}

/** Highest logit, lowest id on ties. */
export function argmax(logits: Float32Array, ids: Int32Array = finiteIds(logits)): number {
  return ids.length ? (ids[argmaxRow(gatherRow(logits, ids))] as number) : 0;
}

/** Candidates (positions in the row) sorted by weight, heaviest first (ties: lower id first). */
function sortedCandidates(cands: number[], w: Float64Array): number[] {
  return cands.sort((a, b) => (w[b] as number) - (w[a] as number) || a - b);
}

interface Weights {
  w: Float64Array; // [S] exp((l - max) / T): softmax numerators at temperature T, float64
  total: number;
}

function weights(row: Float32Array, temperature: number): Weights {
  const maxLogit = row[argmaxRow(row)] as number;
  const w = new Float64Array(row.length);
  let total = 0;
  for (let s = 0; s < row.length; s++) {
    const v = Math.exp(((row[s] as number) - maxLogit) / temperature);
    w[s] = v;
    total += v;
  }
  return { w, total };
}

/**
 * The row positions top-k then top-p keep, heaviest first. Only positions with weight >= a
 * cut-off are sorted: when the mass at or above the cut-off already reaches topP * total, no
 * lighter one can be in the nucleus, so the tail is skipped without changing the result.
 */
function nucleus({ w, total }: Weights, p: SamplingParams): number[] {
  const cut = 1e-6; // weights are relative to the max, which is 1
  let massAbove = 0;
  for (let s = 0; s < w.length; s++) if ((w[s] as number) >= cut) massAbove += w[s] as number;
  // topP 1 keeps every id with weight > 0, even one whose weight vanishes next to the
  // total in float64 (e.g. 3e-17 at temperature 0.05), so no cut-off then
  const lowest = p.topK > 0 || p.topP >= 1 || massAbove < p.topP * total ? Number.MIN_VALUE : cut;
  const cands: number[] = [];
  for (let s = 0; s < w.length; s++) if ((w[s] as number) >= lowest) cands.push(s);
  let kept = sortedCandidates(cands, w);
  if (p.topK > 0) kept = kept.slice(0, p.topK);
  if (p.topP >= 1) return kept;
  // top-p renormalizes over what top-k kept (HF order); without top-k that is all the mass,
  // including the tail the cut-off skipped.
  const keptTotal = p.topK > 0 ? kept.reduce((m, s) => m + (w[s] as number), 0) : total;
  let cum = 0;
  for (let n = 0; n < kept.length; n++) {
    cum += w[kept[n] as number] as number;
    if (cum >= p.topP * keptTotal) return kept.slice(0, n + 1);
  }
  return kept;
}

/** The ids a draw can return under `p` (temperature > 0), heaviest first. For tests and docs. */
export function nucleusIds(logits: Float32Array, p: SamplingParams): number[] {
  const ids = finiteIds(logits);
  return nucleus(weights(gatherRow(logits, ids), p.temperature), p).map((s) => ids[s] as number);
}

/**
 * Draw one position of a row [S] (the logits at some ascending ids) with the request's
 * sampling parameters and Rng; ids with -Infinity logits are never drawn.
 */
export function samplePos(row: Float32Array, p: SamplingParams, rng: Rng): number {
  if (p.temperature === 0) return argmaxRow(row);
  const wt = weights(row, p.temperature);
  if (p.topP < 1 || p.topK > 0) {
    const kept = nucleus(wt, p);
    let u = rng.next() * kept.reduce((m, s) => m + (wt.w[s] as number), 0);
    for (const s of kept) if ((u -= wt.w[s] as number) < 0) return s;
    return kept[kept.length - 1] as number; // u landed on rounding error at the end
  }
  let u = rng.next() * wt.total;
  let last = 0;
  for (let s = 0; s < row.length; s++) {
    if ((wt.w[s] as number) === 0) continue;
    last = s;
    if ((u -= wt.w[s] as number) < 0) return s;
  }
  return last;
}

/** Draw one id from `logits` [V] with the request's sampling parameters and Rng. */
export function sampleToken(logits: Float32Array, p: SamplingParams, rng: Rng, ids: Int32Array = finiteIds(logits)): number {
  return ids.length ? (ids[samplePos(gatherRow(logits, ids), p, rng)] as number) : 0;
}

export interface TokenLogprob {
  id: number;
  logprob: number;
}

/** The k most likely ids of a row under the raw distribution (ties: lower id first), O(S k). */
export function topLogprobsRow(row: Float32Array, ids: Int32Array, logZ: number, k: number): TokenLogprob[] {
  const top: number[] = [];
  const better = (a: number, b: number) => (row[a] as number) > (row[b] as number) || (row[a] === row[b] && a < b);
  for (let s = 0; s < row.length && k > 0; s++) {
    if (top.length === k && !better(s, top[k - 1] as number)) continue;
    let at = top.length === k ? k - 1 : top.length;
    while (at > 0 && better(s, top[at - 1] as number)) at--;
    top.splice(at, 0, s);
    if (top.length > k) top.pop();
  }
  return top.map((s) => ({ id: ids[s] as number, logprob: (row[s] as number) - logZ }));
}

/** The k most likely ids under the raw distribution (ties: lower id first), O(S k). */
export function topLogprobs(logits: Float32Array, logZ: number, k: number, ids: Int32Array = finiteIds(logits)): TokenLogprob[] {
  return topLogprobsRow(gatherRow(logits, ids), ids, logZ, k);
}
