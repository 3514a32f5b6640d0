// The trainer's side of a constrained turn: replay the sampled completion ids through the
// same constraint (matcher + filter) the server used and return each position's allowed
// set, so the trainer's log-softmax runs over exactly the ids the server sampled from
// (the GRPO ratio is then 1 at policy lag 0; constraint.ts `allowedIds` is the shared rule).
//
// Compact: positions share masks (every position inside a free-text field has the same
// one), so the result is the distinct masks and one index per position. An id outside its
// position's set means the turn was not sampled under this constraint (a server that
// ignored the grammar, e.g. vLLM < 0.10.2 drops `structured_outputs` silently): the replay
// stops there and says so, and the trainer scores that turn unmasked.
import type { CompiledConstraint } from './compile.ts';
import { TokenConstraint, type ConstraintOptions } from './constraint.ts';

export interface ReplayResult {
  /** Distinct allowed sets as bitmasks over token ids [K][ceil(vocab.idSpace / 32)] (support already applied). */
  masks: Int32Array[];
  /** [T] index into `masks` for each completion position (T = number of completion ids). */
  maskIndex: Int32Array;
  /** Every id was in its position's set; when false, `maskIndex` is only valid before `rejectedAt`. */
  accepted: boolean;
  /** First position whose id was not allowed (null when accepted). */
  rejectedAt: number | null;
}

/** FNV-1a over the words: a bucket key for finding equal masks. */
function maskKey(mask: Int32Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < mask.length; i++) h = Math.imul(h ^ (mask[i] as number), 0x01000193);
  return h >>> 0;
}

function sameMask(a: Int32Array, b: Int32Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Each position's allowed set for `completionIds` sampled under `compiled` with `opts`
 * (the request's max_tokens). The support (the ids with a finite logit) is the compiled
 * vocabulary's: a trimmed model's kept ids (vocab.ts), every id otherwise. Masks are found
 * and deduplicated in the vocabulary's index space and returned over token ids.
 */
export async function replayConstraint(compiled: CompiledConstraint, opts: ConstraintOptions, completionIds: readonly number[]): Promise<ReplayResult> {
  const c = await TokenConstraint.create(compiled, opts);
  const masks: Int32Array[] = [];
  const buckets = new Map<number, number[]>();
  const maskIndex = new Int32Array(completionIds.length).fill(-1);
  try {
    for (let t = 0; t < completionIds.length; t++) {
      const id = completionIds[t] as number;
      const mask = await c.nextMask();
      const key = maskKey(mask);
      const bucket = buckets.get(key) ?? [];
      let k = bucket.find((i) => sameMask(masks[i] as Int32Array, mask));
      if (k === undefined) {
        k = masks.push(mask) - 1;
        bucket.push(k);
        buckets.set(key, bucket);
      }
      maskIndex[t] = k;
      if (!c.has(mask, id) || !c.accept(id)) return { masks: masks.map((m) => c.idMask(m)), maskIndex, accepted: false, rejectedAt: t };
    }
    return { masks: masks.map((m) => c.idMask(m)), maskIndex, accepted: true, rejectedAt: null };
  } finally {
    c.dispose();
  }
}
