// The hand-checked fixture of the compare tests: two methods on five test instances (one
// seen, one user-only, one task-only, two both-unseen), G-STEER with two episodes of b1,
// and a downstream score file for one agent. Every number the tests expect is worked by
// hand from these records in tests/eval/compare.test.ts.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DownstreamScores } from '../../eval/downstream-scores.ts';
import { episode, resultOf } from './scored-fixture.ts';

// [weight, essential, covered]; factors: matched?; then asks, retrieves
export const DIRECT = [
  episode(
    's1',
    'seen',
    [
      [2, true, true],
      [1, false, false],
    ],
    [true, false],
  ),
  episode(
    'u1',
    'unseen_user',
    [
      [3, true, false],
      [1, false, true],
    ],
    [true],
  ),
  episode('t1', 'unseen_task', [[2, true, true]], [true, false]),
  episode(
    'b1',
    'both_unseen',
    [
      [1, true, false],
      [1, false, false],
    ],
    [],
  ),
  episode(
    'b2',
    'both_unseen',
    [
      [2, true, true],
      [2, false, false],
    ],
    [true],
  ),
];
export const GSTEER = [
  episode(
    's1',
    'seen',
    [
      [2, true, true],
      [1, false, true],
    ],
    [true, true, false],
    2,
    1,
  ),
  episode(
    'u1',
    'unseen_user',
    [
      [3, true, true],
      [1, false, false],
    ],
    [true, false],
    3,
    0,
  ),
  episode('t1', 'unseen_task', [[2, true, true]], [true], 1, 1),
  episode(
    'b1',
    'both_unseen',
    [
      [1, true, true],
      [1, false, false],
    ],
    [true, false],
    2,
    0,
  ),
  episode(
    'b1',
    'both_unseen',
    [
      [1, true, false],
      [1, false, true],
    ],
    [true],
    4,
    1,
  ),
  episode(
    'b2',
    'both_unseen',
    [
      [2, true, true],
      [2, false, true],
    ],
    [true, true],
    2,
    0,
  ),
];

/** P overall p, Q overall q per round; the dimensions derived so Table 4 can be checked too. */
const round = (p: number, q: number) => ({
  p: { overall: p, goal: p + 1, content: p - 1, presentation: p, actionability: p },
  q: { overall: q, depth: q, logic: q + 1, clarity: q - 1 },
});
const report = (
  instanceId: string,
  group: 'seen' | 'unseen_user' | 'unseen_task' | 'both_unseen',
  method: string,
  ps: [number, number],
  qs: [number, number],
) => ({ instanceId, group, method, episode: 0, rounds: [round(ps[0], qs[0]), round(ps[1], qs[1])] });

export const SCORES: DownstreamScores = {
  format: 'gsteer-downstream',
  v: 1,
  agent: { name: 'OpenAI DR', model: 'o4-mini-deep-research', standIn: false },
  judge: { model: 'rubric stand-in', standIn: true, rounds: 2 },
  methods: [
    { name: 'G-STEER', original: false, source: 'gsteer.json' },
    { name: 'Original', original: true, source: null },
  ],
  scores: [
    report('s1', 'seen', 'Original', [4, 5], [6, 6]),
    report('u1', 'unseen_user', 'Original', [3, 3], [5, 6]),
    report('t1', 'unseen_task', 'Original', [4, 4], [6, 7]),
    report('b1', 'both_unseen', 'Original', [2, 3], [5, 5]),
    report('s1', 'seen', 'G-STEER', [5, 5], [6, 7]),
    report('u1', 'unseen_user', 'G-STEER', [4, 5], [6, 6]),
    report('t1', 'unseen_task', 'G-STEER', [5, 6], [7, 7]),
    report('b1', 'both_unseen', 'G-STEER', [4, 4], [6, 5]),
  ],
};

/** The three files in `dir`: direct.json, gsteer.json (saved eval results) and downstream.json. */
export function writeFixture(dir: string, o: { samples?: number; sweep?: number[] } = {}): { direct: string; gsteer: string; downstream: string } {
  const files = { direct: join(dir, 'direct.json'), gsteer: join(dir, 'gsteer.json'), downstream: join(dir, 'downstream.json') };
  writeFileSync(files.direct, JSON.stringify(resultOf(DIRECT, 'direct', 'Direct Rewrite', o)));
  writeFileSync(files.gsteer, JSON.stringify(resultOf(GSTEER, 'gsteer', 'G-STEER', o)));
  writeFileSync(files.downstream, JSON.stringify(SCORES));
  return files;
}
