// The progress bar in logs (not a TTY): one line per 10% and, during long stretches
// between deciles, at least one line every 30 s, each with count, ETA and the caller's info.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { progressBar } from '../../util/progress.ts';

function logStream() {
  const lines: string[] = [];
  const stream = { isTTY: false, write: (s: string) => (lines.push(s), true) } as unknown as NodeJS.WriteStream;
  return { lines, stream };
}

afterEach(() => vi.useRealTimers());

describe('progressBar in logs', () => {
  it('writes a line per decile, not per tick', () => {
    const { lines, stream } = logStream();
    const bar = progressBar('work', 100, stream);
    for (let i = 0; i < 100; i++) bar.tick(1, `item ${i}`);
    bar.done();
    // deciles 0 (ticks 1-9) .. 10 (tick 100): 11 lines; done() adds none after 100%.
    expect(lines).toHaveLength(11);
    expect(lines[0]).toMatch(/^work \[-+\] 1\/100 1% elapsed 0:00 eta .* item 0\n$/);
    expect(lines.at(-1)).toMatch(/^work \[#{24}\] 100\/100 100% .* item 99\n$/);
  });

  it('writes a line every 30 s while no decile is crossed', () => {
    vi.useFakeTimers({ now: 0 });
    const { lines, stream } = logStream();
    const bar = progressBar('slow', 1000, stream);
    bar.tick(); // decile 0: first line
    for (let i = 0; i < 8; i++) {
      vi.setSystemTime((i + 1) * 10_000); // 10 s per tick, all inside decile 0
      bar.tick(1, `t${i}`);
    }
    // lines at t = 0, 30 s and 60 s (ticks at 30 000 and 60 000 ms since the last line)
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/ 4\/1000 0% elapsed 0:30 .* t2\n$/);
    expect(lines[2]).toMatch(/ 7\/1000 1% elapsed 1:00 .* t5\n$/);
  });

  it('print() in a log is the line alone, on the stream given', () => {
    const { lines, stream } = logStream();
    const out = logStream();
    const bar = progressBar('work', 10, stream);
    bar.tick();
    bar.print('update 1 done', out.stream);
    expect(out.lines).toEqual(['update 1 done\n']);
    expect(lines).toHaveLength(1); // the first tick's line; print() adds nothing to the bar's stream
  });
});
