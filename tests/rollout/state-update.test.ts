// Online user-state update (method §6) on the real local Redis: only the best trajectory of a
// group writes, ties go to the lowest index, the group's snapshot stays readable.
import { describe, it, expect, afterAll } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import fc from 'fast-check';
import { InstanceSchema } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { RuleJudge } from '../../rollout/judge-rule.ts';
import { bestOfGroup, updateUserState, type ScoredTrajectory } from '../../rollout/state-update.ts';
import { RedisUserStore } from '../../rollout/user-store-redis.ts';
import { answer, covered, trajectory } from './helpers/trajectory.ts';

const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
const prefix = `gsteer-test:rollout-update:${randomUUID()}`;
afterAll(async () => {
  const left = await redis.keys(`${prefix}*`);
  if (left.length) await redis.del(...left);
  await redis.quit();
});

const encoder = new HashedEncoder(512);
const instance = InstanceSchema.parse({
  id: 'inst-1',
  userId: 'u1',
  taskId: 't',
  split: 'train',
  query: 'Which laptop should I buy?',
  targets: [{ id: 't', description: 'd', seedQuestion: 'q', seedAnswer: 'a', weight: 1 }],
});
// Every trajectory learns something keepable; only one of them may land.
const group = (rewards: number[]): ScoredTrajectory[] =>
  rewards.map((reward, i) => ({
    reward,
    trajectory: trajectory(i, [covered(`fact_${i}`, `fact number ${i}`, `value${i} from the user`)], [answer(`q${i}?`, `value${i} from the user`)]),
  }));

describe('bestOfGroup', () => {
  it('picks the highest reward, ties to the lowest index', () => {
    expect(bestOfGroup(group([0.1, 0.7, 0.3, 0.7]))).toBe(1);
    expect(bestOfGroup(group([-1, -1, -1, -1]))).toBe(0);
    expect(bestOfGroup(group([0.2, 0.1, 0.5, 0.49]))).toBe(2);
  });
  it('property: the chosen reward is the max and no lower index has it', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.integer({ min: -3, max: 3 }).map((x) => x / 2),
          { minLength: 1, maxLength: 8 },
        ),
        (rs) => {
          const b = bestOfGroup(group(rs));
          expect(rs[b]).toBe(Math.max(...rs));
          expect(rs.slice(0, b).every((r) => r < (rs[b] as number))).toBe(true);
        },
      ),
    );
  });
});

describe('updateUserState on Redis', () => {
  it('only the best trajectory changes the user state; the snapshot stays as it was', async () => {
    const store = new RedisUserStore(redis, encoder, { prefix, runId: 'best' });
    await store.init([{ userId: 'u1', profile: 'Ecologist.', memories: [{ name: 'os', purpose: 'operating system', value: 'Linux' }] }]);
    const before = await store.read('u1', 1);
    const res = await updateUserState({ store, judge: new RuleJudge(encoder) }, instance, group([0.2, 0.9, 0.9, -1]));
    expect(res.best).toBe(1);
    expect(res.changed).toBe(true);
    expect(res.version).toBe(2);
    expect(res.verdict.verdicts.map((v) => [v.slot.name, v.reason])).toEqual([['fact_1', 'kept']]);
    const after = await store.read('u1', 2);
    expect(after.memories.map((m) => [m.name, m.value, m.sourceInstance])).toEqual([
      ['os', 'Linux', undefined],
      ['fact_1', 'value1 from the user', 'inst-1'],
    ]);
    expect(after.profile).toBe('Ecologist.');
    expect(await store.read('u1', 1)).toEqual(before);
    // a group whose best keeps nothing writes no version
    const none = group([0.5]);
    none[0]!.trajectory.finalSlots = [covered('pref', 'preference', 'no preference')];
    const r2 = await updateUserState({ store, judge: new RuleJudge(encoder) }, instance, none);
    expect([r2.changed, r2.version]).toEqual([false, 2]);
    await store.clear();
    expect(await redis.keys(`${prefix}:{best}:run:*`)).toEqual([]);
  });
});
