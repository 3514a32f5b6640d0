// Splitting one update's sequences into micro-batches and padding each to a [b, T] tensor
// (method §5 multi-turn: only policy tokens carry loss, so padding is simply mask 0).
// Right padding is safe: attention is causal, so pad tokens never influence real ones.
import { InputError } from '../util/errors.ts';

/** Token id used for padding; any id the model knows works since its mask is 0. */
export const PAD_ID = 0;

/** Per-token rows aligned with inputIds (masks, logprobs); all [B][T_b]. */
export type Rows = readonly (readonly number[])[];

/** Check that every per-token array has the same ragged shape as inputIds. */
export function checkAligned(inputIds: Rows, fields: Record<string, Rows | undefined>): void {
  for (const [name, rows] of Object.entries(fields)) {
    if (!rows) continue;
    if (rows.length !== inputIds.length)
      throw new InputError(
        `train batch: ${name} has ${rows.length} rows but inputIds has ${inputIds.length}; every per-token field needs one row per sequence`,
      );
    rows.forEach((r, b) => {
      if (r.length !== inputIds[b]!.length)
        throw new InputError(
          `train batch: ${name}[${b}] has ${r.length} entries but inputIds[${b}] has ${inputIds[b]!.length} tokens; per-token fields must align with the token ids`,
        );
    });
  }
}

/** Contiguous index ranges of at most `size` sequences. */
export function microBatches(n: number, size: number): number[][] {
  const out: number[][] = [];
  for (let s = 0; s < n; s += size) out.push([...Array(Math.min(size, n - s)).keys()].map((i) => s + i));
  return out;
}

/** Rows `idx` right-padded with `fill` to the longest of them: [b][T]. */
export function padRows(rows: Rows, idx: readonly number[], fill: number): number[][] {
  const T = Math.max(...idx.map((b) => rows[b]!.length));
  return idx.map((b) => {
    const r = rows[b]!;
    return r.length === T ? [...r] : [...r, ...new Array<number>(T - r.length).fill(fill)];
  });
}

export function sumRows(rows: Rows): number {
  let s = 0;
  for (const r of rows) for (const x of r) s += x;
  return s;
}
