// A decoded Tinker Datum in gsteer's scoring layout (method §5.13). Tinker: position i of
// model_input predicts target_tokens[i], every loss input is [N]. gsteer's scorer (Policy.score)
// takes whole sequences ids [T = N + 1] and returns column t = log p(ids[t] | ids[<t]) with
// column 0 = 0, so a datum is the sequence tokens ++ [last target] and its position i is
// column i + 1. gsteer's engine scores next-token targets only (target_tokens[i] =
// model_input[i + 1], the shift every Tinker recipe builds); another target is refused.
import { InputError } from '../../util/errors.ts';
import type { MaskedTurn } from '../../structured/turn-masks.ts';
import { LOSS_INPUTS } from './losses.ts';
import type { EngineDatum, TinkerLossFn } from './types.ts';

/** Check a datum's shapes and the inputs `fn` reads. */
export function checkDatum(d: EngineDatum, i: number, fn: TinkerLossFn): void {
  const N = d.tokens.length;
  const where = `datum ${i}`;
  if (N === 0) throw new InputError(`${where}: model_input is empty; a datum needs at least one token`);
  const t = d.inputs.target_tokens;
  if (!t) throw new InputError(`${where}: loss_fn_inputs.target_tokens is missing; every loss needs it ([N] ints, model_input shifted by one)`);
  const need = new Set<string>(['target_tokens', ...LOSS_INPUTS[fn]]);
  for (const key of need) {
    const v = d.inputs[key];
    if (!v) throw new InputError(`${where}: loss_fn_inputs.${key} is missing; ${fn} reads ${[...need].join(', ')}`);
    if (v.length !== N)
      throw new InputError(`${where}: loss_fn_inputs.${key} has ${v.length} entries but model_input has ${N} tokens; every loss input is [N]`);
    for (let j = 0; j < N; j++)
      if (!Number.isFinite(v[j]!)) throw new InputError(`${where}: loss_fn_inputs.${key}[${j}] is ${v[j]}; loss inputs must be finite numbers`);
  }
  for (let j = 0; j + 1 < N; j++)
    if (t[j] !== d.tokens[j + 1])
      throw new InputError(
        `${where}: target_tokens[${j}] is ${t[j]} but model_input[${j + 1}] is ${d.tokens[j + 1]}; gsteer's engine scores next-token targets only ` +
          '(target_tokens = the full sequence without its first token, model_input = without its last)',
      );
  if (d.scored && d.scored.length !== N)
    throw new InputError(`${where}: gsteer scored has ${d.scored.length} entries but model_input has ${N} tokens; it is [N]`);
  if (d.constraint && (d.constraint.start < 0 || d.constraint.start >= N))
    throw new InputError(
      `${where}: gsteer constraint.start is ${d.constraint.start}, outside model_input's 0..${N - 1}; it is the position whose target is the first constrained token`,
    );
}

/** The whole sequence [N + 1]: model_input then the last target. */
export function sequenceOf(d: EngineDatum): number[] {
  return [...d.tokens, d.inputs.target_tokens[d.tokens.length - 1]!];
}

/** A datum's [N] input as a scoring row [N + 1] (column 0 = 0). */
export function columnRow(values: readonly number[] | undefined, N: number): number[] {
  return values ? [0, ...values] : new Array<number>(N + 1).fill(0);
}

/** The turn the mask replay needs (structured/turn-masks.ts): prompt = the sequence up to the first constrained token. */
export function maskedTurn(d: EngineDatum, seq: readonly number[]): MaskedTurn {
  if (!d.constraint) return { promptIds: seq, completionIds: [] };
  const { start, ...constraint } = d.constraint;
  return { promptIds: seq.slice(0, start + 1), completionIds: seq.slice(start + 1), constraint };
}

/**
 * Columns [N + 1] to score: the datum's `scored` positions and every position whose loss input
 * is nonzero; all of them without `scored`, and always for dro (its quadratic term is nonzero
 * wherever p != q).
 */
export function scoredRow(d: EngineDatum, fn: TinkerLossFn): number[] {
  const N = d.tokens.length;
  if (!d.scored || fn === 'dro') return [0, ...new Array<number>(N).fill(1)];
  const v = lossInput(d, fn);
  return [0, ...d.scored.map((s, i) => (s !== 0 || v[i] !== 0 ? 1 : 0))];
}

/** The input whose zeros make a position's loss exactly 0 (weights, or advantages); dro has none. */
export function lossInput(d: EngineDatum, fn: TinkerLossFn): number[] {
  return fn === 'cross_entropy' ? d.inputs.weights! : d.inputs.advantages!;
}

/** A datum whose loss and gradient are exactly 0 whatever the weights (all of its loss input is 0; never for dro). */
export function isIdle(d: EngineDatum, fn: TinkerLossFn): boolean {
  return fn !== 'dro' && lossInput(d, fn).every((x) => x === 0);
}
