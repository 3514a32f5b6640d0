// `gsteer train`'s output while it runs: one fixed-width line per update on stdout, so a log
// file reads as a table. On a terminal the progress bar (util/progress.ts, stderr) stays under
// the lines; when stdout is not a terminal there is no bar and each line ends with the ETA.
import { etaSeconds, fmtSeconds, progressBar, type Progress } from '../util/progress.ts';
import type { MetricsRecord } from './sink.ts';

const num = (v: number | string | undefined, digits: number, width: number) => (typeof v === 'number' ? v.toFixed(digits) : '-').padStart(width);

/**
 * `step  3/20  reward  0.4521  std 0.1200  zero_std 0.250  invalid 0.031  turns 2.40  loss -0.0123  grad_norm  0.812  12.3s`
 * `seconds`: wall-clock time of this update (since the previous one), or undefined.
 */
export function trainLine(rec: MetricsRecord, total: number, seconds: number | undefined): string {
  const w = String(total).length;
  return [
    `step ${String(rec.step).padStart(w)}/${total}`,
    `reward ${num(rec.reward, 4, 7)}`,
    `std ${num(rec.reward_std, 4, 6)}`,
    `zero_std ${num(rec.frac_reward_zero_std, 3, 5)}`,
    `invalid ${num(rec.invalid_rate, 3, 5)}`,
    `turns ${num(rec['turns/mean'], 2, 5)}`,
    `loss ${num(rec.loss, 4, 7)}`,
    `grad_norm ${num(rec.grad_norm, 3, 6)}`,
    seconds === undefined ? '-' : `${seconds.toFixed(1)}s`,
    // issue 32: a NaN / infinite loss or grad norm skipped the update (adapter unchanged)
    ...(Number(rec['train/nonfinite_skipped'] ?? 0) > 0 ? ['SKIPPED: non-finite loss or grad_norm, adapter unchanged'] : []),
  ].join('  ');
}

export interface UpdateLines {
  update(rec: MetricsRecord): void;
  /** A message on stderr (checkpoints, restarts), above the bar so neither garbles the other. */
  note(msg: string): void;
  done(): void;
}

/** Prints the updates of one process's share of a run: steps startStep+1 .. total. */
export function updateLines(startStep: number, total: number, out: NodeJS.WriteStream = process.stdout, err: NodeJS.WriteStream = process.stderr): UpdateLines {
  const updates = total - startStep;
  const bar: Progress | null = out.isTTY ? progressBar('grpo', updates, err) : null;
  const start = Date.now();
  let count = 0;
  let prevWall = 0; // wall_time counts from the start of this process's run (or resume)
  return {
    update(rec) {
      count++;
      const wall = typeof rec.wall_time === 'number' ? rec.wall_time : undefined;
      const line = trainLine(rec, total, wall === undefined ? undefined : wall - prevWall);
      prevWall = wall ?? prevWall;
      if (bar) {
        bar.tick(1);
        bar.print(line, out);
      } else {
        out.write(`${line}  eta ${fmtSeconds(etaSeconds((Date.now() - start) / 1000, count, updates))}\n`);
      }
    },
    note: (msg) => (bar ? bar.print(msg, err) : err.write(`${msg}\n`)),
    done: () => bar?.done(),
  };
}
