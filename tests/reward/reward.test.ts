import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { computeReward, rewardInputFromTrajectory, type RewardInput } from '../../reward/index.ts';
import { RewardSchema } from '../../configs/schema.ts';
import type { Target } from '../../data/schema.ts';
import type { EvidenceSlot } from '../../core/types.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { InputError } from '../../util/errors.ts';
import { TableEncoder } from './fake-encoder.ts';

const cfg = RewardSchema.parse({}); // paper defaults: alpha 1, beta 0.3, 0.04/0.01/0.08/0.08, 1.0/0.2, 0.86

const target = (id: string, description: string, weight = 1, criterion?: string): Target => ({
  id,
  description,
  seedQuestion: '?',
  seedAnswer: 'a',
  weight,
  essential: false,
  lateActivatable: false,
  ...(criterion ? { criterion } : {}),
});
const slot = (name: string, purpose: string, status: EvidenceSlot['status'] = 'covered'): EvidenceSlot => ({
  name,
  purpose,
  status,
  value: 'v',
  source: 'dialogue',
});

// Hand-worked example (4-d unit vectors, e1..e4 = basis).
//   g1 "budget" = e1; g2 "timeline must be precise" (description + criterion) = e2; g3 "audience" = e3
//   v_a "budget_cap money" = (0.8, 0.6, 0, 0)   v_b "deadline when" = (0, 0.6, 0, 0.8)
//   v_c "color" = (-0.6, 0, 0, 0.8)   (the partial slot "audience_level" never enters)
// S = max(0, cos):    a    b    c
//          g1      [0.8, 0,   0]     (cos(g1, c) = -0.6 -> 0)
//          g2      [0.6, 0.6, 0]
//          g3      [0,   0,   0]
// M*: g1-a (0.8) + g2-b (0.6) = 1.4 (the alternative g2-a + g1-b = 0.6 is worse)
// s = [0.8, 0.6, 0]; s_hat = [0.8, 0.6, 0]
// Cov = 1.4 / 3 = 0.466667;  C_FP = (0.2 + 0.4 + 1) / 3 = 0.533333
// R_align = 1.0 * 0.466667 - 0.3 * 0.533333 = 0.306667
// Questions: q1 = e1; q2 = e2 (two "?" -> n_multi 1); q3 = (0.9, 0.43589, 0, 0): cos(q1) = 0.9 >= 0.86 -> repeat;
//   q4 = (0, 0.85, 0.52678, 0): cos(q2) = 0.85 < 0.86, cos(q3) = 0.3705 -> not a repeat.  n_rep = 1, n_multi = 1
// C_acq = 0.04 * 4 + 0.01 * 2 = 0.18;  C_con = 0.08 * 1 + 0.08 * 1 = 0.16
// R(stop) = 0.306667 - 0.18 - 0.16 = -0.033333; invalid: -1.033333; max_turns: -0.233333
const table = {
  budget: [1, 0, 0, 0],
  'timeline must be precise': [0, 1, 0, 0],
  audience: [0, 0, 1, 0],
  'budget_cap money': [0.8, 0.6, 0, 0],
  'deadline when': [0, 0.6, 0, 0.8],
  color: [-0.6, 0, 0, 0.8],
  'What is your budget?': [1, 0, 0, 0],
  'And your timeline? Also the audience?': [0, 1, 0, 0],
  'What budget do you have?': [0.9, Math.sqrt(1 - 0.81), 0, 0],
  'Timeline?': [0, 0.85, Math.sqrt(1 - 0.85 ** 2), 0],
};
const input = (over: Partial<RewardInput> = {}): RewardInput => ({
  instanceId: 'i1',
  targets: [target('t1', 'budget', 2), target('t2', 'timeline', 1, 'must be precise'), target('t3', 'audience', 1)],
  finalSlots: [slot('budget_cap', 'money'), slot('audience_level', 'expertise', 'partial'), slot('deadline', 'when'), slot('color', '')],
  askedQuestions: ['What is your budget?', 'And your timeline? Also the audience?', 'What budget do you have?', 'Timeline?'],
  askCount: 4,
  retrieveCount: 2,
  termination: 'stop',
  ...over,
});

describe('computeReward (method §4), hand-worked golden numbers', () => {
  it('every component of a stopped episode', async () => {
    const b = await computeReward(input(), cfg, new TableEncoder(table));
    expect(b.coverage).toBeCloseTo(1.4 / 3, 6);
    expect(b.c_fp).toBeCloseTo(1.6 / 3, 6);
    expect(b.r_align).toBeCloseTo(0.306667, 6);
    expect(b.n_rep).toBe(1);
    expect(b.n_multi).toBe(1);
    expect(b.t_ask).toBe(4);
    expect(b.t_ret).toBe(2);
    expect(b.c_acq).toBeCloseTo(0.18, 10);
    expect(b.c_con).toBeCloseTo(0.16, 10);
    expect(b.penalty_invalid).toBe(0);
    expect(b.penalty_nonstop).toBe(0);
    expect(b.reward).toBeCloseTo(-0.033333, 6);
    expect(b.n_targets).toBe(3);
    expect(b.n_covered_slots).toBe(3);
    // Zero-similarity pairs (g3-c) are not reported.
    expect(b.matches.map((m) => [m.targetId, m.slotName, Number(m.similarity.toFixed(6))])).toEqual([
      ['t1', 'budget_cap', 0.8],
      ['t2', 'deadline', 0.6],
    ]);
  });

  it('invalid and non-stop episodes keep R_align and subtract their penalty', async () => {
    const inv = await computeReward(input({ termination: 'invalid' }), cfg, new TableEncoder(table));
    expect(inv.penalty_invalid).toBe(1);
    expect(inv.reward).toBeCloseTo(-1.033333, 6);
    const ns = await computeReward(input({ termination: 'max_turns' }), cfg, new TableEncoder(table));
    expect(ns.penalty_nonstop).toBe(0.2);
    expect(ns.reward).toBeCloseTo(-0.233333, 6);
  });

  it('rubric-weighted coverage: (2*0.8 + 1*0.6 + 1*0) / 4 = 0.55', async () => {
    const b = await computeReward(input(), { ...cfg, coverageWeighting: 'rubric' }, new TableEncoder(table));
    expect(b.coverage).toBeCloseTo(0.55, 6);
    expect(b.r_align).toBeCloseTo(0.55 - 0.3 * (1.6 / 3), 6);
  });

  it('no covered slot: Cov = 0, C_FP = 0, only costs remain', async () => {
    const b = await computeReward(
      input({ finalSlots: [slot('x', 'y', 'uncovered')], askedQuestions: [], askCount: 0, retrieveCount: 1 }),
      cfg,
      new TableEncoder(table),
    );
    expect(b.coverage).toBe(0);
    expect(b.c_fp).toBe(0);
    expect(b.reward).toBeCloseTo(-0.01, 10);
  });

  it('rejects an instance without targets and zero rubric weights with InputError', async () => {
    await expect(computeReward(input({ targets: [] }), cfg, new TableEncoder(table))).rejects.toThrow(InputError);
    const zeroW = input({ targets: [target('t1', 'budget', 0)], finalSlots: [] });
    await expect(computeReward(zeroW, { ...cfg, coverageWeighting: 'rubric' }, new TableEncoder(table))).rejects.toThrow(/weights sum to 0/);
  });
});

describe('computeReward with the hashed encoder', () => {
  const enc = new HashedEncoder(512);
  const targets = [target('t1', 'travel budget per night'), target('t2', 'preferred airline alliance'), target('t3', 'dietary restrictions vegetarian')];

  it('slots that restate the targets give Cov = 1 and C_FP = 0', async () => {
    const finalSlots = [slot('travel budget', 'per night'), slot('preferred airline', 'alliance'), slot('dietary restrictions', 'vegetarian')];
    const b = await computeReward({ targets, finalSlots, askedQuestions: [], askCount: 0, retrieveCount: 0, termination: 'stop' }, cfg, enc);
    expect(b.coverage).toBeCloseTo(1, 5);
    expect(b.c_fp).toBeCloseTo(0, 5);
    expect(b.matches.map((m) => m.targetId).sort()).toEqual(['t1', 't2', 't3']);
  });

  it('properties: Cov in [0,1], C_FP >= 0, order of slots and uncovered slots do not matter', async () => {
    const words = ['budget', 'hotel', 'night', 'airline', 'vegetarian', 'museum', 'kids', 'quiet', 'beach', 'alliance'];
    const slotArb = fc.record({
      name: fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 3 }).map((w) => w.join(' ')),
      purpose: fc.array(fc.constantFrom(...words), { maxLength: 3 }).map((w) => w.join(' ')),
      status: fc.constantFrom('covered', 'partial', 'uncovered'),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(slotArb, { maxLength: 6 }), fc.integer({ min: 0, max: 1000 }), async (raw, seed) => {
        const finalSlots = raw.map((r) => slot(r.name, r.purpose, r.status as EvidenceSlot['status']));
        const base = { targets, askedQuestions: [], askCount: 0, retrieveCount: 0, termination: 'stop' as const };
        const b = await computeReward({ ...base, finalSlots }, cfg, enc);
        expect(b.coverage).toBeGreaterThanOrEqual(0);
        expect(b.coverage).toBeLessThanOrEqual(1 + 1e-9);
        expect(b.c_fp).toBeGreaterThanOrEqual(-1e-9);
        const shuffled = [...finalSlots].sort((x, y) => ((x.name.length * 31 + seed) % 7) - ((y.name.length * 31 + seed) % 7));
        const extra = [...shuffled, slot('ignored', 'not covered', 'partial')];
        const b2 = await computeReward({ ...base, finalSlots: extra }, cfg, enc);
        expect(b2.reward).toBeCloseTo(b.reward, 9);
      }),
      { numRuns: 60 },
    );
  });
});

describe('rewardInputFromTrajectory', () => {
  const traj = {
    version: 1 as const,
    runId: 'r',
    instanceId: 'i1',
    userId: 'u',
    groupId: 'g',
    index: 2,
    policyVersion: 0,
    snapshotId: 's',
    turns: [],
    finalSlots: [slot('budget_cap', 'money')],
    askedQuestions: ['What is your budget?'],
    retrieveCount: 3,
    askCount: 1,
    termination: 'invalid' as const,
    refinedQuery: null,
  };
  const inst = { id: 'i1', targets: [target('t1', 'budget')] };

  it('takes the targets from the instance and everything else from the trajectory', async () => {
    const inp = rewardInputFromTrajectory(traj, inst);
    expect(inp).toEqual({
      instanceId: 'i1',
      targets: inst.targets,
      finalSlots: traj.finalSlots,
      askedQuestions: traj.askedQuestions,
      askCount: 1,
      retrieveCount: 3,
      termination: 'invalid',
    });
    // S = 0.8; Cov = 0.8; C_FP = 0.2; R_align = 0.8 - 0.06 = 0.74; C_acq = 0.04 + 0.03 = 0.07; R = 0.74 - 0.07 - 1 = -0.33
    const b = await computeReward(inp, cfg, new TableEncoder(table));
    expect(b.reward).toBeCloseTo(-0.33, 6);
  });

  it('refuses a trajectory of another instance', () => {
    expect(() => rewardInputFromTrajectory({ ...traj, instanceId: 'i2' }, inst)).toThrow(/is for instance "i2"/);
  });
});
