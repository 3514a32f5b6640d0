// Terminal output: sparklines and the curves panel of `gsteer monitor`, the per-update line
// of `gsteer train` and where it goes (above the bar on a terminal, alone in a log).
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { MetricsRecord } from '../../monitor/sink.ts';
import { curvesPanel, fmtStat, mainCurves, sparkline } from '../../monitor/sparkline.ts';
import { trainLine, updateLines } from '../../monitor/train-lines.ts';

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllEnvs();
});

describe('sparkline', () => {
  it('maps min..max onto the eight blocks', () => {
    // level = round((v - 0) / (7 - 0) * 7) = v
    expect(sparkline([0, 1, 2, 3, 4, 5, 6, 7], 80)).toBe('▁▂▃▄▅▆▇█');
    expect(sparkline([7, 0, 3.4], 80)).toBe('█▁▄'); // 3.4 -> round(3.4) = 3 -> ▄
  });

  it('draws a flat series mid-height and a missing value as a space', () => {
    expect(sparkline([2, 2, 2], 10)).toBe('▄▄▄');
    expect(sparkline([0, undefined, 10], 10)).toBe('▁ █');
  });

  it('averages buckets when there are more values than columns', () => {
    // 0..15 into 4 columns: means 1.5, 5.5, 9.5, 13.5; levels round((m - 1.5) / 12 * 7) = 0, 2 (2.33), 5 (4.67), 7
    expect(
      sparkline(
        Array.from({ length: 16 }, (_, i) => i),
        4,
      ),
    ).toBe('▁▃▆█');
  });

  it('is never wider than asked, and one column per value when they fit', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ noNaN: true, min: -1e6, max: 1e6 }), { minLength: 1, maxLength: 300 }), fc.integer({ min: 1, max: 200 }), (xs, w) => {
        const s = sparkline(xs, w);
        return s.length === Math.min(xs.length, w) && /^[▁▂▃▄▅▆▇█]+$/.test(s);
      }),
    );
  });
});

describe('curves panel', () => {
  it('formats stats in at most 8 characters', () => {
    expect([0, 2, 0.123456, 1234.56, 123456, -0.0001234].map(fmtStat)).toEqual(['0', '2', '0.1235', '1235', '1.23e+5', '-1.23e-4']);
  });

  it('picks the main curves present, reward components in name order', () => {
    const r = { step: 1, reward: 1, 'rewards/z/mean': 1, 'rewards/a/mean': 1, 'rewards/a/std': 1, entropy: 1, loss: 1, 'completions/mean_length': 3 };
    expect(mainCurves([r])).toEqual(['reward', 'rewards/a/mean', 'rewards/z/mean', 'entropy', 'completions/mean_length']);
  });

  it('three updates: a title, a header and one line per curve with min / last / max', () => {
    const records: MetricsRecord[] = [
      { step: 1, reward: 0.1, 'rewards/coverage/mean': 0.5, grad_norm: 2 },
      { step: 2, reward: 0.3, 'rewards/coverage/mean': 0.5, grad_norm: 1 },
      { step: 3, reward: 0.25, 'rewards/coverage/mean': 0.5, grad_norm: 4 },
    ];
    // label column = len('rewards/coverage/mean') = 21, then 2 spaces, the 3-wide sparkline, stats right-aligned in 1 + 8
    // reward: 0.25 -> (0.15 / 0.2) * 7 = 5.25 -> ▆; grad_norm: 2 -> (1 / 3) * 7 = 2.33 -> ▃; flat coverage -> ▄▄▄
    const pad = (s: string) => s.padEnd(21 + 2);
    expect(curvesPanel(records, 80).split('\n')).toEqual([
      'curves over 3 update(s), one per column',
      `${pad('curve')}   ` + '      min' + '     last' + '      max',
      `${pad('reward')}▁█▆` + '      0.1' + '     0.25' + '      0.3',
      `${pad('rewards/coverage/mean')}▄▄▄` + '      0.5' + '      0.5' + '      0.5',
      `${pad('grad_norm')}▃▁█` + '        1' + '        4' + '        4',
    ]);
  });

  it('fits the terminal width: every line at most `columns` long', () => {
    const records = Array.from(
      { length: 500 },
      (_, i): MetricsRecord => ({ step: i + 1, reward: Math.sin(i / 20), invalid_rate: i / 500, 'completions/mean_length': 40 + i }),
    );
    for (const cols of [60, 80, 132, 300]) {
      const lines = curvesPanel(records, cols).split('\n');
      expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(cols);
    }
    expect(curvesPanel(records, 80).split('\n')[0]).toBe('curves over 500 update(s), 17.9 per column (mean)'); // 80 - 23 - 2 - 27 = 28 columns, 500 / 28
  });
});

describe('gsteer train lines', () => {
  const rec: MetricsRecord = {
    step: 3,
    reward: 0.45214,
    reward_std: 0.12,
    frac_reward_zero_std: 0.25,
    invalid_rate: 0.125,
    'turns/mean': 2.4,
    loss: -0.01234,
    grad_norm: 0.8123,
  };

  it('one fixed-width line per update', () => {
    expect(trainLine(rec, 20, 12.34)).toBe(
      'step  3/20  reward  0.4521  std 0.1200  zero_std 0.250  invalid 0.125  turns  2.40  loss -0.0123  grad_norm  0.812  12.3s',
    );
    expect(trainLine({ step: 12 }, 20, undefined)).toBe(
      'step 12/20  reward       -  std      -  zero_std     -  invalid     -  turns     -  loss       -  grad_norm      -  -',
    );
  });

  const stream = (isTTY: boolean, log: [string, string][], name: string) =>
    ({ isTTY, write: (s: string) => (log.push([name, s]), true) }) as unknown as NodeJS.WriteStream;

  it('in a log (stdout not a terminal): the lines alone, seconds from wall_time, ETA at the end, no bar', () => {
    vi.useFakeTimers({ now: 0 });
    const log: [string, string][] = [];
    const p = updateLines(4, 6, stream(false, log, 'out'), stream(true, log, 'err'));
    vi.setSystemTime(10_000);
    p.update({ ...rec, step: 5, wall_time: 5 });
    vi.setSystemTime(30_000);
    p.update({ ...rec, step: 6, wall_time: 12.5 });
    p.done();
    // update 1 of 2 after 10 s: eta 10 s; update 2: eta 0; seconds 5 - 0 and 12.5 - 5
    expect(log.map(([s]) => s)).toEqual(['out', 'out']);
    expect(log[0]?.[1]).toMatch(/^step 5\/6 .* grad_norm {2}0\.812 {2}5\.0s {2}eta 0:10\n$/);
    expect(log[1]?.[1]).toMatch(/^step 6\/6 .* 7\.5s {2}eta 0:00\n$/);
  });

  it('on a terminal: each line above the bar (bar cleared, line on stdout, bar redrawn)', () => {
    vi.stubEnv('CI', '');
    const log: [string, string][] = [];
    const p = updateLines(0, 2, stream(true, log, 'out'), stream(true, log, 'err'));
    p.update({ ...rec, step: 1, wall_time: 3 });
    const at = log.findIndex(([s]) => s === 'out');
    expect(log[at]?.[1]).toMatch(/^step 1\/2 .* 3\.0s\n$/);
    expect(log[at - 1]).toEqual(['err', '\r\x1b[K']);
    expect(log[at + 1]?.[0]).toBe('err');
    expect(log[at + 1]?.[1]).toMatch(/^grpo \[#{12}-{12}\] 1\/2 50% elapsed \S+ eta \S+$/);
    log.length = 0;
    p.note('gsteer: checkpoint step 1 written'); // stderr, above the bar too
    expect(log).toEqual([
      ['err', '\r\x1b[K'],
      ['err', 'gsteer: checkpoint step 1 written\n'],
      ['err', expect.stringMatching(/^grpo .* 1\/2 /)],
    ]);
  });
});
