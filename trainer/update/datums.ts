// An update batch's rows as Tinker datums (method §5.13). A row is a whole sequence ids [T]
// with per-token fields aligned to it (column t = token t, column 0 a prompt token); its datum
// is model_input = ids[0 .. T-2], target_tokens = ids[1 .. T-1], and every loss input takes
// columns 1 .. T-1 (position i = column i + 1). Column 0 never carries loss (it has no
// logprob), so nothing is lost.
import type { TurnConstraint } from '../../core/types.ts';
import type { EngineDatum } from '../engine/types.ts';

export interface RowDatum {
  ids: readonly number[]; // [T]
  /** Loss inputs per column [T] (weights, logprobs, advantages). */
  inputs: Record<string, readonly number[]>;
  /** [T] 1 on the columns whose logprob is wanted (a turn's completion; gsteer extension). */
  scored?: readonly number[];
  /** The constraint the completion was sampled under, and the row's first completion column. */
  constraint?: { spec: TurnConstraint; firstColumn: number } | null;
}

export function rowDatum(r: RowDatum): EngineDatum {
  const shift = (v: readonly number[]) => v.slice(1);
  const inputs: EngineDatum['inputs'] = { target_tokens: shift(r.ids) };
  for (const [k, v] of Object.entries(r.inputs)) inputs[k] = shift(v);
  return {
    tokens: r.ids.slice(0, -1),
    inputs,
    ...(r.scored ? { scored: shift(r.scored) } : {}),
    // the position whose target is the first completion token
    ...(r.constraint ? { constraint: { ...r.constraint.spec, start: r.constraint.firstColumn - 1 } } : {}),
  };
}

/** A row's first loss column (its prompt length), -1 when it has none. */
export function firstColumn(mask: readonly number[]): number {
  return mask.findIndex((x) => x !== 0);
}

/** Per-datum [N] outputs back to per-row columns [T] (column 0 = 0). */
export function toColumns(outputs: readonly (readonly number[])[]): number[][] {
  return outputs.map((o) => [0, ...o]);
}
