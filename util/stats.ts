// Mean and spread of a list of numbers, the one definition every layer uses (logged metrics,
// group advantages, bootstrap SE, learning trends). Summation left to right from 0, so the
// same list gives the same bits wherever it is summarised.
//   mean(x)            = sum_i x_i / n                      (0 for an empty list)
//   sampleVariance(x)  = sum_i (x_i - mean)^2 / (n - 1)      (Bessel, torch.var; 0 for n < 2)
//   sampleStd(x)       = sqrt(sampleVariance(x))             (torch.std)
//   populationStd(x)   = sqrt(sum_i (x_i - mean)^2 / n)      (the spread of this batch itself; 0 for empty)

export function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

const sumSq = (xs: readonly number[], m: number) => xs.reduce((a, x) => a + (x - m) ** 2, 0);

export function sampleVariance(xs: readonly number[]): number {
  return xs.length < 2 ? 0 : sumSq(xs, mean(xs)) / (xs.length - 1);
}

export function sampleStd(xs: readonly number[]): number {
  return Math.sqrt(sampleVariance(xs));
}

export function populationStd(xs: readonly number[]): number {
  return xs.length ? Math.sqrt(sumSq(xs, mean(xs)) / xs.length) : 0;
}
