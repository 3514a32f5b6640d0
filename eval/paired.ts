// Paired differences between two policies evaluated on the same instances with the same
// sampling seeds (the demo's base / SFT / GRPO rows; method §8): the difference of a pooled
// metric, with the bootstrap SE of the difference from the SAME instance resamples applied to
// both (eval/spread.ts: the resamples depend only on seed, view and instance count), and a
// plain verdict: a difference smaller than 2 SE is "within noise". Pure.
import { summarize, type Estimate } from './bootstrap.ts';
import type { MetricKey, ViewResult } from './spread.ts';

/** b - a of metric k; the SE is null when the two were not evaluated on the same instances. */
export function pairedDifference(a: ViewResult, b: ViewResult, k: MetricKey, level: number): Estimate {
  const va = a.metrics[k];
  const vb = b.metrics[k];
  const point = va === null || vb === null ? null : vb - va;
  const same = a.instances.join('\u0000') === b.instances.join('\u0000') && a.reps.length === b.reps.length;
  const reps = same
    ? b.reps.map((r, i) => {
        const x = a.reps[i]?.[k] ?? null;
        const y = r[k];
        return x === null || y === null ? null : y - x;
      })
    : [];
  return summarize(point, reps, level);
}

/** "+0.0123 ± 0.0045 (2.7 SE: above noise)" or "... (0.8 SE: within noise)"; 2 SE is the line. */
export function verdict(d: Estimate, digits = 4): string {
  if (d.value === null) return 'n/a (a ratio without denominator)';
  const v = `${d.value >= 0 ? '+' : ''}${d.value.toFixed(digits)}`;
  if (d.se === null) return `${v} (no SE: different instances or too few resamples)`;
  if (d.se === 0) return `${v} ± 0 (${d.value === 0 ? 'no difference in any resample' : 'the same difference in every resample'})`;
  const z = Math.abs(d.value) / d.se;
  return `${v} ± ${d.se.toFixed(digits)} (${z.toFixed(1)} SE: ${z >= 2 ? 'above noise' : 'within noise'})`;
}
