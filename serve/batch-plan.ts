// The pure half of one batched step (batch-scheduler.ts applies it): which sequences decode
// one id, and for each sequence still in its prompt, which prompt blocks it takes from the
// prefix cache and which it computes, within the step's token budget (vLLM's
// max_num_batched_tokens). It reads and changes nothing: not the jobs, not the model, not
// even the cache's use order (the lookup must not mark entries used; the apply step does).
//
// Rules, in order: every decoding sequence feeds one id (budget 1 each); then prefilling
// sequences in admission order: leading blocks found in the cache are taken (the whole
// prompt, when cached with its last position's logits, needs no forward pass at all); then
// blocks are computed until the budget is spent (at least one block runs in every step);
// a block another sequence computes in this very step is taken from the cache next step.
import type { CacheEntry } from './prefix-cache.ts';

/** A sequence's phase: feeding its prompt, or decoding one id per step. */
export type Phase = 'prefill' | 'decode';

export interface PlanInput<J> {
  job: J;
  phase: Phase;
  /** Prompt positions already in the sequence's KV cache. */
  fed: number;
  promptLength: number;
  /** Prefix-cache keys of the prompt's blocks (null without a cache). */
  keys: readonly string[] | null;
}

export interface JobStep<J> {
  job: J;
  phase: Phase;
  /** prefill: blocks taken from the prefix cache, in order, starting at `fed`. */
  hits: CacheEntry[];
  /** prefill: prompt blocks computed in this step (indexes into keys), after the hits. */
  blocks: number[];
  /** prefill: the whole prompt was cached; the last position's logits (the cache's own array). */
  cachedLogits: Float32Array | null;
}

export interface PlanOptions {
  blockSize: number;
  maxBatchedTokens: number;
  /** Reads a prefix-cache entry without marking it used; null: no cache. */
  peek: ((key: string) => CacheEntry | undefined) | null;
}

/** The step's work per sequence: decoders first, then prefilling sequences with anything to do, each in input order. */
export function planStep<J>(jobs: readonly PlanInput<J>[], o: PlanOptions): JobStep<J>[] {
  const bs = o.blockSize;
  let budget = o.maxBatchedTokens;
  let prefillPlanned = false;
  const inFlight = new Set<string>(); // blocks some sequence computes in this step
  const plan: JobStep<J>[] = [];
  for (const j of jobs) {
    if (j.phase !== 'decode') continue;
    plan.push({ job: j.job, phase: 'decode', hits: [], blocks: [], cachedLogits: null });
    budget--;
  }
  for (const j of jobs) {
    if (j.phase !== 'prefill') continue;
    const n = j.promptLength;
    const p: JobStep<J> = { job: j.job, phase: 'prefill', hits: [], blocks: [], cachedLogits: null };
    for (let b = j.fed / bs; b * bs < n; b++) {
      const end = Math.min(n, (b + 1) * bs);
      const key = j.keys?.[b];
      if (key !== undefined && o.peek && p.blocks.length === 0) {
        const entry = o.peek(key);
        if (entry && (end < n || entry.logits)) {
          p.hits.push(entry);
          if (end === n) p.cachedLogits = entry.logits;
          continue;
        }
      }
      if (key !== undefined && inFlight.has(key)) break; // computed by another sequence right now: take it next step
      if (end - b * bs > budget && prefillPlanned) break;
      p.blocks.push(b);
      budget -= end - b * bs;
      prefillPlanned = true;
      if (key !== undefined) inFlight.add(key);
    }
    if (p.hits.length || p.blocks.length || p.cachedLogits) plan.push(p);
  }
  return plan;
}
