// The IntentRL-style clarifier's reward (method §8.5; reward/dialogue-slots.ts): it writes an
// empty STATE, so its coverage comes from what the dialogue gathered (one slot per informative
// answer, text "question answer"), under the same objective as G-STEER. Worked by hand with fixed
// vectors; then the wiring: `variant: clarifier` scores trajectories this way in GRPO.
import { describe, expect, it } from 'vitest';
import { RewardSchema, RunConfigSchema } from '../../configs/schema.ts';
import { NON_COMMITTAL } from '../../core/types.ts';
import type { Instance, Target } from '../../data/schema.ts';
import { computeReward, dialogueSlots, rewardInputFromTrajectory } from '../../reward/index.ts';
import { environmentOf } from '../../rollout/env/index.ts';
import { answer, trajectory } from '../rollout/helpers/trajectory.ts';
import { TableEncoder } from './fake-encoder.ts';

const cfg = RewardSchema.parse({}); // paper: alpha 1, beta 0.3, lambda_ask 0.04
const target = (id: string, description: string): Target => ({
  id,
  description,
  seedQuestion: '?',
  seedAnswer: 'a',
  weight: 1,
  essential: false,
  lateActivatable: false,
});
const targets = [target('t1', 'budget limit'), target('t2', 'travel dates')];

// Three questions: a budget answer, a non-committal one (no evidence), a hobby answer.
const traj = trajectory(
  0,
  [],
  [answer('What is your budget?', 'Under 1200 EUR.'), answer('When do you travel?', NON_COMMITTAL, null), answer('Any hobbies?', 'I like chess.')],
);

// 6-d unit vectors: targets e1, e2; slot "budget" (0.8, 0.6, 0...): cos 0.8 to t1, 0.6 to t2;
// slot "hobbies" e3 (cos 0 to both); the three questions e4, e5, e6 (no repeats).
const encoder = new TableEncoder({
  'budget limit': [1, 0, 0, 0, 0, 0],
  'travel dates': [0, 1, 0, 0, 0, 0],
  'What is your budget? Under 1200 EUR.': [0.8, 0.6, 0, 0, 0, 0],
  'Any hobbies? I like chess.': [0, 0, 1, 0, 0, 0],
  'What is your budget?': [0, 0, 0, 1, 0, 0],
  'When do you travel?': [0, 0, 0, 0, 1, 0],
  'Any hobbies?': [0, 0, 0, 0, 0, 1],
});

describe('the clarifier reward', () => {
  it('covers what the dialogue gathered (worked by hand), where its empty STATE would cover nothing', async () => {
    expect(dialogueSlots(traj).map((s) => [s.name, s.purpose, s.status])).toEqual([
      ['What is your budget?', 'Under 1200 EUR.', 'covered'],
      ['Any hobbies?', 'I like chess.', 'covered'],
    ]);
    // S = [[0.8, 0], [0.6, 0]]: M* = t1-budget (0.8); Cov = 0.8 / 2 = 0.4;
    // C_FP = ((1 - 0.8) + (1 - 0)) / 2 = 0.6; R_align = 0.4 - 0.3 x 0.6 = 0.22;
    // C_acq = 0.04 x 3 = 0.12 (the non-committal question still costs); R = 0.10.
    const b = await computeReward(rewardInputFromTrajectory(traj, { id: 'inst-1', targets }, 'dialogue'), cfg, encoder);
    expect(b.coverage).toBeCloseTo(0.4, 6);
    expect(b.c_fp).toBeCloseTo(0.6, 6);
    expect(b.r_align).toBeCloseTo(0.22, 6);
    expect(b.c_acq).toBeCloseTo(0.12, 6);
    expect(b.reward).toBeCloseTo(0.1, 6);
    // from the (empty) state: coverage 0, so three questions only ever cost (-0.12)
    const fromState = await computeReward(rewardInputFromTrajectory(traj, { id: 'inst-1', targets }), cfg, encoder);
    expect([fromState.coverage, fromState.reward]).toEqual([0, -0.12]);
  });

  it('is what GRPO scores under variant: clarifier (the environment reward part)', async () => {
    const instance: Instance = {
      id: 'inst-1',
      userId: 'u1',
      taskId: 't',
      split: 'train',
      query: 'Plan a trip',
      profile: '',
      persona: [],
      targets: [target('t1', 'What is your budget? Under 1200 EUR.')],
      edges: [],
    };
    const scored = async (variant: 'gsteer' | 'clarifier') => {
      const env = await environmentOf(RunConfigSchema.parse({ variant }));
      return (await env.reward().then((r) => r.score(traj, instance))).components.coverage;
    };
    expect(await scored('clarifier')).toBeGreaterThan(0.9); // the answered question matches its target by meaning
    expect(await scored('gsteer')).toBe(0); // G-STEER reads the (here empty) evidence state
  });
});
