// `gsteer reward` and `gsteer embed` through the real CLI entry (cli/main.ts), with files on
// disk and the embedded encoder. The reward numbers are checked against computeReward on the
// same input (the math itself has hand-worked golden tests in reward.test.ts); what this
// file checks is the file formats, the wiring and the errors.
import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../cli/main.ts';
import { computeReward } from '../../reward/index.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { RewardSchema } from '../../configs/schema.ts';
import type { Trajectory } from '../../core/types.ts';

const instance = {
  id: 'u1-t1',
  userId: 'u1',
  taskId: 't1',
  split: 'train',
  query: 'Plan a trip to Kyoto',
  targets: [
    {
      id: 'budget',
      description: 'nightly hotel budget',
      seedQuestion: 'What is your nightly hotel budget?',
      seedAnswer: 'Under 150 USD.',
      weight: 2,
      essential: true,
    },
    {
      id: 'diet',
      description: 'dietary restrictions',
      criterion: 'vegetarian meals',
      seedQuestion: 'Any dietary restrictions?',
      seedAnswer: 'Vegetarian.',
      weight: 1,
    },
  ],
  edges: [['budget', 'diet']],
};
const finalSlots = [
  { name: 'hotel budget', purpose: 'nightly', status: 'covered' as const, value: '150 USD', source: 'dialogue' as const },
  { name: 'weather', purpose: 'season', status: 'covered' as const, value: 'autumn', source: 'memory' as const },
];
const summary = { finalSlots, askedQuestions: ['What is your nightly hotel budget?', 'Budget? Season?'], retrieveCount: 1, termination: 'max_turns' };
const full: Trajectory = {
  version: 1,
  runId: 'r',
  instanceId: 'u1-t1',
  userId: 'u1',
  groupId: 'g',
  index: 0,
  policyVersion: 3,
  snapshotId: 's',
  turns: [],
  finalSlots,
  askedQuestions: summary.askedQuestions,
  retrieveCount: 1,
  askCount: 2,
  termination: 'max_turns',
  refinedQuery: null,
};

let dir: string;
let out: string[];
let err: string[];
const file = (name: string, body: string) => (writeFileSync(join(dir, name), body), join(dir, name));

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gsteer-reward-cli-'));
  file('inst.jsonl', `${JSON.stringify(instance)}\n`);
  file('summary.json', JSON.stringify(summary));
  file('full.json', JSON.stringify(full));
  file('other.json', JSON.stringify({ ...full, instanceId: 'u9-t9' }));
  file('bad.json', JSON.stringify({ finalSlots: [{ name: 'x', status: 'done' }], termination: 'stop' }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(args: string[]): Promise<number> {
  out = [];
  err = [];
  const w = vi.spyOn(process.stdout, 'write').mockImplementation((s) => (out.push(String(s)), true));
  const e = vi.spyOn(console, 'error').mockImplementation((s) => void err.push(String(s)));
  try {
    return await main(args);
  } finally {
    w.mockRestore();
    e.mockRestore();
  }
}

describe('gsteer reward', () => {
  it('scores the small summary format and a full Trajectory record identically', async () => {
    const args = ['reward', '--instance', join(dir, 'inst.jsonl'), '--id', 'u1-t1', '--set', 'encoder.dim=256', '--trajectory'];
    expect(await cli([...args, join(dir, 'summary.json')])).toBe(0);
    const a = JSON.parse(out.join(''));
    expect(await cli([...args, join(dir, 'full.json')])).toBe(0);
    const b = JSON.parse(out.join(''));
    expect(b).toEqual(a);
    const ref = await computeReward(
      {
        targets: instance.targets.map((t) => ({ lateActivatable: false, essential: false, ...t })),
        finalSlots,
        askedQuestions: summary.askedQuestions,
        askCount: 2,
        retrieveCount: 1,
        termination: 'max_turns',
      },
      RewardSchema.parse({}),
      new HashedEncoder(256),
    );
    expect(a.reward).toBeCloseTo(ref.reward, 12);
    expect(a.penalty_nonstop).toBe(0.2);
    expect(a.n_multi).toBe(1);
    expect(a.matches[0].targetId).toBe('budget');
  });

  it('--set reward.* changes the coefficients', async () => {
    const args = ['reward', '--instance', join(dir, 'inst.jsonl'), '--id', 'u1-t1', '--trajectory', join(dir, 'summary.json')];
    await cli(args);
    const base = JSON.parse(out.join(''));
    await cli([...args, '--set', 'reward.nonStopPenalty=0.5']);
    expect(JSON.parse(out.join('')).reward).toBeCloseTo(base.reward - 0.3, 12);
  });

  it('bad input exits 2 with a message naming the file and the field', async () => {
    const args = ['reward', '--instance', join(dir, 'inst.jsonl'), '--id', 'u1-t1', '--trajectory'];
    expect(await cli([...args, join(dir, 'bad.json')])).toBe(2);
    expect(err.join('\n')).toMatch(/bad\.json: finalSlots\.0\.status/);
    expect(await cli([...args, join(dir, 'other.json')])).toBe(2);
    expect(err.join('\n')).toMatch(/for instance "u9-t9" but --id is "u1-t1"/);
    expect(await cli(['reward', '--instance', join(dir, 'inst.jsonl'), '--trajectory', join(dir, 'summary.json')])).toBe(2);
    expect(err.join('\n')).toMatch(/--id is required/);
  });
});

describe('gsteer embed', () => {
  it('prints unit vectors of the configured dim, or the cosine matrix', async () => {
    expect(await cli(['embed', '--set', 'encoder.dim=32', 'hotel budget', 'vegan food'])).toBe(0);
    const r = JSON.parse(out.join(''));
    expect(r.dim).toBe(32);
    expect(r.vectors).toHaveLength(2);
    expect(Math.hypot(...r.vectors[0])).toBeCloseTo(1, 5);
    expect(await cli(['embed', '--cosine', 'hotel budget', 'hotel budget'])).toBe(0);
    expect(JSON.parse(out.join('')).cosine[0][1]).toBeCloseTo(1, 5);
  });
});
