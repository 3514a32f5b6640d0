// The dashboard's pure parts: merging records from the file and the stream (resume-proof),
// reading metrics.jsonl as it is being written, and the chart plan.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chartPlan, X_KEYS } from '../../monitor/dashboard/charts.ts';
import { mergeRecord, numericKeys, parseMetricsText } from '../../monitor/dashboard/records.ts';
import type { MetricsRecord } from '../../monitor/sink.ts';
import { fixtureRecord } from './dashboard-fixture.ts';

const rec = (step: number, epoch: number): MetricsRecord => ({ step, reward: step / 10, epoch_tag: epoch });
const mergeAll = (start: MetricsRecord[], recs: MetricsRecord[]) => recs.reduce((acc, r) => mergeRecord(acc, r) ?? acc, start);

describe('mergeRecord', () => {
  it('appends, ignores a record seen again, and on a resume replaces the re-run updates', () => {
    const first = [1, 2, 3, 4, 5, 6].map((s) => rec(s, 0));
    const held = mergeAll([], first);
    expect(held).toEqual(first);
    expect(mergeRecord(held, rec(3, 0))).toBeNull(); // the file and the stream both brought update 3
    // Resume from the checkpoint at 4: updates 5 and 6 run again (epoch 1), then 7.
    const after = mergeAll(held, [rec(5, 1), rec(6, 1), rec(7, 1)]);
    expect(after).toEqual([rec(1, 0), rec(2, 0), rec(3, 0), rec(4, 0), rec(5, 1), rec(6, 1), rec(7, 1)]);
  });

  it('property: the stream of a run with resumes, with repeats, merges to exactly its final metrics.jsonl', () => {
    // A history is a list of events: run the next update, or resume from a checkpoint at or before the last update.
    const event = fc.oneof(
      fc.constant({ kind: 'update' as const }),
      fc.record({ kind: fc.constant('resume' as const), back: fc.nat(5) }),
      fc.record({ kind: fc.constant('repeat' as const) }),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 60 }), (events) => {
        let file: MetricsRecord[] = []; // the reference: what metrics.jsonl holds (truncateLines on resume)
        const delivered: MetricsRecord[] = []; // what the dashboard receives, in order
        let epoch = 0;
        for (const e of events) {
          if (e.kind === 'update') {
            const r = rec(file.length + 1, epoch);
            file.push(r);
            delivered.push(r);
          } else if (e.kind === 'resume') {
            epoch++;
            file = file.slice(0, Math.max(0, file.length - e.back));
          } else if (file.length) delivered.push(file.at(-1) as MetricsRecord); // the other source brings the newest again
        }
        const merged = mergeAll([], delivered);
        // Updates the resume threw away and did not re-run yet are still shown until re-run;
        // every update up to the file's last is exactly the file's.
        expect(merged.slice(0, file.length)).toEqual(file);
        expect(merged.map((r) => r.step)).toEqual(merged.map((_, i) => i + 1)); // one point per update, none doubled
      }),
    );
  });
});

describe('parseMetricsText', () => {
  it('waits for a line still being written and reports a bad one by file:line', () => {
    const text = `${JSON.stringify({ step: 1, reward: 0.5 })}\nnot json\n{"reward": 1}\n${JSON.stringify({ step: 2 })}\n{"step": 3, "rew`;
    const { records, problems } = parseMetricsText(text, 'RUN/metrics.jsonl');
    expect(records.map((r) => r.step)).toEqual([1, 2]);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^RUN\/metrics\.jsonl:2: not valid JSON/);
    expect(problems[1]).toMatch(/^RUN\/metrics\.jsonl:3: not a metrics record \(a JSON object with a numeric "step"\)/);
  });
});

describe('chartPlan', () => {
  it('gives every metric the update records its panel, components with their ±std band', () => {
    const plan = chartPlan(numericKeys([fixtureRecord(1)]));
    const byId = new Map(plan.map((c) => [c.id, c]));
    expect(plan[0]?.id).toBe('reward');
    expect(byId.get('rewards/r_align')?.series).toEqual([{ key: 'rewards/r_align/mean', band: 'rewards/r_align/std' }]);
    expect(byId.get('waiting')?.series.map((s) => s.key)).toEqual(['time/wait_rollouts_s', 'time/wait_trainer_s']);
    expect(byId.get('turns')?.series.map((s) => s.key)).toEqual(['turns/ask', 'turns/mean', 'turns/retrieve']);
    expect(byId.get('trajectories_per_second')?.series).toEqual([{ key: 'trajectories_per_second' }]);
    for (const id of [
      'reward_std',
      'frac_reward_zero_std',
      'advantages',
      'loss',
      'clip_ratio',
      'grad_norm',
      'entropy',
      'completions',
      'rates',
      'policy_lag',
      'tokens_per_second',
    ])
      expect(byId.has(id), id).toBe(true);
  });

  it('groups keys it does not know by prefix, so new metrics get charts with no code change', () => {
    const plan = chartPlan(['step', 'reward', 'kl/mean', 'kl/max', 'clip_ratio/low_mean', 'grammar_reject_rate', 'rewards/r_align/min']);
    expect(plan.find((c) => c.id === 'other:kl')?.series.map((s) => s.key)).toEqual(['kl/max', 'kl/mean']);
    expect(plan.find((c) => c.id === 'other:grammar_reject_rate')).toBeDefined();
    expect(plan.find((c) => c.id === 'clip_ratio')?.series).toEqual([{ key: 'clip_ratio/low_mean' }]);
    expect(plan.find((c) => c.id === 'rewards/r_align')?.series).toEqual([{ key: 'rewards/r_align/min' }]);
  });

  it('property: each numeric key but the x axes is drawn in exactly one chart, and no chart is empty', () => {
    const segment = fc.constantFrom('reward', 'rewards', 'loss', 'clip_ratio', 'turns', 'time', 'kl', 'mean', 'std', 'x_1', 'a');
    const key = fc.array(segment, { minLength: 1, maxLength: 4 }).map((p) => p.join('/'));
    fc.assert(
      fc.property(fc.uniqueArray(fc.oneof(key, fc.constantFrom(...X_KEYS)), { maxLength: 30 }), (keys) => {
        const drawn = chartPlan(keys).flatMap((c) => {
          expect(c.series.length).toBeGreaterThan(0);
          return c.series.flatMap((s) => (s.band ? [s.key, s.band] : [s.key]));
        });
        expect(drawn.sort()).toEqual(keys.filter((k) => !X_KEYS.includes(k)).sort());
      }),
    );
  });
});
