// The QREF demo's pass-rate selection (cli/demo/qref-select.ts): which train questions PPO and
// GRPO train on, worked by hand, and the config rules around it (configs/demo-settings.ts).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { passRateSelect, questionRates } from '../../cli/demo/qref-select.ts';
import { loadConfig } from '../../configs/load.ts';
import { REPO } from '../e2e/helpers.ts';

describe('passRateSelect', () => {
  // rates < 1 by |rate - 0.5|: b 0, f 0, d 0.25, e 0.25, c 0.5; a (solved) never
  const rates = [
    { id: 'a', rate: 1 },
    { id: 'b', rate: 0.5 },
    { id: 'c', rate: 0 },
    { id: 'd', rate: 0.75 },
    { id: 'e', rate: 0.25 },
    { id: 'f', rate: 0.5 },
  ];
  it('takes the unsolved questions closest to 0.5, ties in the given order', () => {
    expect(passRateSelect(rates, 3)).toEqual(['b', 'f', 'd']);
    expect(passRateSelect(rates, 4)).toEqual(['b', 'f', 'd', 'e']);
  });
  it('a never-solved question comes last; a solved one never; fewer than n when fewer are unsolved', () => {
    expect(passRateSelect(rates, 10)).toEqual(['b', 'f', 'd', 'e', 'c']);
    expect(passRateSelect([{ id: 'a', rate: 1 }], 8)).toEqual([]);
  });
});

describe('questionRates', () => {
  it('is the mean refined recall per question, in order of first appearance', () => {
    const ep = (questionId: string, recall_refined: number) => ({ questionId, components: { recall_refined, reward: 9 } });
    expect(questionRates([ep('q2', 0.5), ep('q1', 1), ep('q2', 1), ep('q2', 0)])).toEqual([
      { id: 'q2', rate: 0.5 },
      { id: 'q1', rate: 1 },
    ]);
  });
});

describe('demo.select in the config', () => {
  const qrefDemo = join(REPO, 'configs/qref-demo.yaml');
  it('is refused beside grpo.trainIds, naming both and the fix', () => {
    expect(() => loadConfig([qrefDemo], ['grpo.trainIds=[q-001]'])).toThrow(
      /demo\.select chooses the train questions, and grpo\.trainIds names them too; set one/,
    );
    expect(loadConfig([qrefDemo], ['demo.select=null', 'grpo.trainIds=[q-001]']).grpo.trainIds).toEqual(['q-001']);
  });
  it('is refused outside env qref', () => {
    expect(() => loadConfig([join(REPO, 'configs/demo.yaml')], ['demo.select.questions=2'])).toThrow(
      /demo\.select is the QREF demo's pass-rate selection \(env qref\), but env is gsteer/,
    );
  });
  it('episodes must be at least 2 (one episode gives rates of 0 or 1 only)', () => {
    expect(() => loadConfig([qrefDemo], ['demo.select.episodes=1'])).toThrow(/demo\.select\.episodes/);
  });
});
