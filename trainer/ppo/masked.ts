// Masked statistics over [B, T] arrays (B sequences, T response positions), as verl's
// verl/utils/torch_functional.py computes them: the mask is 1 on response tokens the policy
// generated and 0 on padding and on observation tokens inside a multi-turn response.
// Pure functions over number arrays; the trainer's tfjs code is checked against these.

export type Matrix = number[][]; // [B, T]

/** Throws unless every array is [B, T] with the mask's B and T and the mask holds only 0/1. */
export function assertShapes(mask: Matrix, ...others: Matrix[]): void {
  const b = mask.length;
  for (const m of others) {
    if (m.length !== b) throw new Error(`internal: batch size ${m.length} != mask's ${b}`);
    m.forEach((row, i) => {
      if (row.length !== (mask[i] as number[]).length) throw new Error(`internal: row ${i} has length ${row.length} != mask's ${(mask[i] as number[]).length}`);
    });
  }
  mask.forEach((row, i) =>
    row.forEach((v, t) => {
      if (v !== 0 && v !== 1) throw new Error(`internal: mask[${i}][${t}] = ${v}, expected 0 or 1`);
    }),
  );
}

/** sum(values * mask) / sum(mask) over the whole batch (verl masked_mean, axis=None). */
export function maskedMean(values: Matrix, mask: Matrix): number {
  assertShapes(mask, values);
  let sum = 0;
  let n = 0;
  values.forEach((row, i) =>
    row.forEach((v, t) => {
      if ((mask[i] as number[])[t]) {
        sum += v;
        n++;
      }
    }),
  );
  if (n === 0) throw new Error('internal: maskedMean over an all-zero mask');
  return sum / n;
}

/**
 * Masked variance; `unbiased` (verl's default) multiplies by n / (n - 1) (Bessel), so it
 * needs at least two masked positions.
 */
export function maskedVar(values: Matrix, mask: Matrix, unbiased = true): number {
  const mean = maskedMean(values, mask);
  const centered = values.map((row) => row.map((v) => (v - mean) ** 2)); // [B, T]
  const v = maskedMean(centered, mask);
  if (!unbiased) return v;
  const n = mask.reduce((a, row) => a + row.reduce((x, y) => x + y, 0), 0);
  if (n < 2) throw new Error('internal: unbiased maskedVar needs at least two masked positions');
  return (v * n) / (n - 1);
}

/** verl masked_whiten: (x - mean) / sqrt(var + 1e-8) over the mask; 0 off the mask (no loss reads it). */
export const WHITEN_EPS = 1e-8;
export function maskedWhiten(values: Matrix, mask: Matrix, shiftMean = true): Matrix {
  const mean = maskedMean(values, mask);
  const scale = 1 / Math.sqrt(maskedVar(values, mask) + WHITEN_EPS);
  return values.map((row, i) => row.map((v, t) => ((mask[i] as number[])[t] ? (v - mean) * scale + (shiftMean ? 0 : mean) : 0)));
}
