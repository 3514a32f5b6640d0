// The Redis user store on the real local Redis, under a random key prefix; each test checks
// that nothing under its prefix is left behind (never FLUSHDB).
import { describe, it, expect, afterAll } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisUserStore } from '../../rollout/user-store-redis.ts';
import { encoder, userStoreConformance } from './user-store-conformance.ts';

const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
const prefix = `gsteer-test:rollout:${randomUUID()}`;
afterAll(async () => {
  const left = await redis.keys(`${prefix}*`);
  if (left.length) await redis.del(...left);
  await redis.quit();
});

userStoreConformance('redis', {
  make: async () => new RedisUserStore(redis, encoder, { prefix, runId: `r${randomUUID().slice(0, 8)}` }),
  // Every conformance test ends with store.clear(), so this checks clear() removes every key.
  leftovers: async () => redis.keys(`${prefix}*`),
});

describe('RedisUserStore keys', () => {
  it('keeps every key of one user in one hash tag and stores embeddings as base64', async () => {
    const store = new RedisUserStore(redis, encoder, { prefix, runId: 'keys' });
    await store.init([{ userId: 'u{1}', profile: 'p', memories: [{ name: 'n', purpose: 'p', value: 'v' }] }]);
    const keys = (await redis.keys(`${prefix}:run:keys:*`)).sort();
    expect(keys).toEqual([
      `${prefix}:run:keys:user:{u%7B1%7D}:latest`,
      `${prefix}:run:keys:user:{u%7B1%7D}:memories`,
      `${prefix}:run:keys:user:{u%7B1%7D}:versions`,
      `${prefix}:run:keys:users`,
    ]);
    const slots = await Promise.all(keys.slice(0, 3).map((k) => redis.call('CLUSTER', 'KEYSLOT', k).catch(() => null)));
    if (slots[0] !== null) expect(new Set(slots).size).toBe(1); // CLUSTER KEYSLOT works on a non-cluster server too
    const mem = JSON.parse((await redis.hget(`${prefix}:run:keys:user:{u%7B1%7D}:memories`, 'm1-0')) as string);
    expect(typeof mem.embedding).toBe('string');
    expect(Buffer.from(mem.embedding, 'base64').length).toBe(encoder.dim * 4);
    await store.clear();
    expect(await redis.keys(`${prefix}:run:keys:*`)).toEqual([]);
  });
});
