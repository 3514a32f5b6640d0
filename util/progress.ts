// A progress bar with ETA on stderr (one line redrawn on a TTY; otherwise, for logs, a line
// per 10% and at least one every LOG_EVERY_MS while work goes on).

export interface Progress {
  tick(n?: number, info?: string): void;
  /** A whole line on `out` (stdout by default) above the bar: on a TTY the bar is cleared and redrawn under it. */
  print(line: string, out?: NodeJS.WritableStream): void;
  done(info?: string): void;
}

/** Seconds left at the mean pace so far (Infinity before the first item). */
export const etaSeconds = (elapsedS: number, count: number, total: number) => (count > 0 ? (elapsedS / count) * (total - count) : Infinity);

export function fmtSeconds(s: number): string {
  if (!Number.isFinite(s)) return '--:--';
  const m = Math.floor(s / 60);
  const sec = Math.floor(s % 60);
  return m >= 60 ? `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m` : `${m}:${String(sec).padStart(2, '0')}`;
}

const LOG_EVERY_MS = 30_000;

export function progressBar(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  const start = Date.now();
  let count = 0;
  let lastDecile = -1;
  let lastLine = start;
  let lastInfo = '';
  const tty = Boolean(stream.isTTY) && !process.env.CI;
  const render = (info = '') => {
    const frac = total > 0 ? Math.min(1, count / total) : 1;
    const elapsed = (Date.now() - start) / 1000;
    const eta = etaSeconds(elapsed, count, total);
    const width = 24;
    const filled = Math.round(frac * width);
    const bar = `${'#'.repeat(filled)}${'-'.repeat(width - filled)}`;
    return `${label} [${bar}] ${count}/${total} ${(frac * 100).toFixed(0)}% elapsed ${fmtSeconds(elapsed)} eta ${fmtSeconds(eta)}${info ? ` ${info}` : ''}`;
  };
  return {
    tick(n = 1, info = '') {
      count += n;
      lastInfo = info;
      if (tty) {
        stream.write(`\r${render(info)}\x1b[K`);
      } else {
        const decile = total > 0 ? Math.floor((count / total) * 10) : 10;
        if (decile !== lastDecile || Date.now() - lastLine >= LOG_EVERY_MS) {
          lastDecile = decile;
          lastLine = Date.now();
          stream.write(`${render(info)}\n`);
        }
      }
    },
    print(line, out = process.stdout) {
      if (!tty) return void out.write(`${line}\n`);
      stream.write('\r\x1b[K');
      out.write(`${line}\n`);
      stream.write(render(lastInfo));
    },
    done(info = '') {
      if (tty) stream.write(`\r${render(info)}\x1b[K\n`);
      else if (lastDecile !== 10) stream.write(`${render(info)}\n`);
    },
  };
}
