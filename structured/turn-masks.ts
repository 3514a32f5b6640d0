// The trainer's side of constrained turns (rollout.constrained, issue 14): replay each
// turn's completion ids through the constraint it was sampled under (one of the environment's
// grammars, given as data: rollout/env/grammars.ts; with gsteer serve's token filter when the
// server reported applying it) to get every position's allowed set, as the TokenMasks the
// masked log-softmax reads (model/token-masks.ts). A grammar compiles once per process (compile.ts cache).
//
// A turn whose recorded spec hash is not the one this code builds (the grammar changed
// between sampling and training) is an error: its masks cannot be rebuilt. A turn whose
// replay rejects an id was not sampled under that mask (an external server that ignored
// the grammar); it is scored unmasked, exactly as an unconstrained turn, and counted.
import type { TurnConstraint } from '../core/types.ts';
import { compileConstraint, qwen3Vocab, replayConstraint, specHash, type ConstraintSpec, type PolicyGrammar, type TokenVocab } from './index.ts';
import { InputError } from '../util/errors.ts';
import type { TokenMasks } from '../model/token-masks.ts';
import type { VocabMap } from '../model/vocab-map.ts';

export interface MaskedTurn {
  promptIds: readonly number[];
  completionIds: readonly number[];
  constraint?: TurnConstraint;
}

export interface ReplayStats {
  'constraint/turns': number; // constrained turns in the batch
  'constraint/replay_rejected': number; // of those, scored unmasked (an id outside its mask)
  'constraint/distinct_masks': number; // mean distinct allowed sets per constrained turn
  'constraint/replay_seconds': number; // replay time (in worker threads: summed over turns)
  /** Time the trainer waited for masks (replay-pool.ts; in-process replay: all of it). */
  'constraint/replay_wait_seconds'?: number;
}

/**
 * The spec a constrained turn was sampled under: the one of `grammars` (the environment's) whose
 * hash it records, with the filter the turn records (none when the server reported none); an
 * error when none has that hash.
 */
export function specOf(c: TurnConstraint, grammars: readonly PolicyGrammar[]): ConstraintSpec {
  const specs: ConstraintSpec[] = grammars.map(({ grammar }) =>
    c.tokenFilter ? { type: 'grammar', grammar, filter: c.tokenFilter } : { type: 'grammar', grammar },
  );
  const spec = specs.find((s) => specHash(s) === c.specSha256);
  if (!spec)
    throw new InputError(
      `a constrained turn was sampled under constraint ${c.specSha256.slice(0, 12)}, but this gsteer builds ${specs.map((s) => specHash(s).slice(0, 12)).join(' or ')} for it ` +
        '(the policy grammar or the token filter changed since the rollout); train with the gsteer version that sampled the run, or set rollout.constrained=false for new runs',
    );
  return spec;
}

/** A replay's masks aligned with prompt + completion ids (column P + j: completion token j). */
export function turnMasks(promptLength: number, completionLength: number, table: Int32Array[], maskIndex: Int32Array): TokenMasks {
  const index = new Int32Array(promptLength + completionLength).fill(-1);
  index.set(maskIndex, promptLength);
  return { table, index };
}

let vocabCache: { kept: Int32Array | null; vocab: TokenVocab } | null = null;
function vocabFor(map: VocabMap | null, size: number): TokenVocab {
  const kept = map?.keptIds ?? null;
  if (vocabCache?.kept !== kept) vocabCache = { kept, vocab: qwen3Vocab(kept, size) };
  return vocabCache.vocab;
}

/** masks[b] for each turn (null = unconstrained or rejected), aligned with prompt + completion ids; `grammars`: the environment's (specOf). */
export async function replayTurnMasks(
  turns: readonly MaskedTurn[],
  model: { vocab: VocabMap | null; config: { vocabSize: number } },
  grammars: readonly PolicyGrammar[],
): Promise<{ masks: (TokenMasks | null)[]; stats: ReplayStats }> {
  const t0 = performance.now();
  const stats: ReplayStats = { 'constraint/turns': 0, 'constraint/replay_rejected': 0, 'constraint/distinct_masks': 0, 'constraint/replay_seconds': 0 };
  const masks: (TokenMasks | null)[] = [];
  let distinct = 0;
  for (const turn of turns) {
    if (!turn.constraint) {
      masks.push(null);
      continue;
    }
    stats['constraint/turns']++;
    const spec = specOf(turn.constraint, grammars);
    const vocab = vocabFor(model.vocab, model.config.vocabSize);
    const compiled = await compileConstraint(spec, vocab);
    const r = await replayConstraint(compiled, { maxTokens: turn.constraint.maxTokens }, turn.completionIds);
    if (!r.accepted) {
      stats['constraint/replay_rejected']++;
      masks.push(null);
      continue;
    }
    masks.push(turnMasks(turn.promptIds.length, turn.completionIds.length, r.masks, r.maskIndex));
    distinct += r.masks.length;
  }
  const kept = stats['constraint/turns'] - stats['constraint/replay_rejected'];
  stats['constraint/distinct_masks'] = kept ? distinct / kept : 0;
  stats['constraint/replay_seconds'] = (performance.now() - t0) / 1000;
  return { masks, stats };
}
