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

/**
 * Redis Cluster key slot (cluster spec, "Keys distribution model"): CRC16-CCITT (XMODEM:
 * poly 0x1021, init 0, no reflection) mod 16384 of the hash tag, i.e. the bytes between the
 * first `{` and the next `}` when that is non-empty, else of the whole key.
 */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}
function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  const tag = close > open + 1 ? key.slice(open + 1, close) : key;
  return crc16(Buffer.from(tag)) % 16384;
}

describe('Redis Cluster key slot (reference for the store test)', () => {
  it('matches the cluster spec: CRC16("123456789") = 0x31C3, and hash tags', () => {
    expect(crc16(Buffer.from('123456789'))).toBe(0x31c3); // the spec's check value
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers')); // the spec's example
    expect(keySlot('foo{}{bar}')).toBe(crc16(Buffer.from('foo{}{bar}')) % 16384); // empty tag: whole key
    expect(keySlot('foo{{bar}}zap')).toBe(crc16(Buffer.from('{bar')) % 16384); // the spec's example
  });
});

describe('RedisUserStore keys', () => {
  it('keeps every key of the run in its hash tag (the run id) and stores embeddings as base64', async () => {
    const store = new RedisUserStore(redis, encoder, { prefix, runId: 'keys' });
    await store.init([{ userId: 'u{1}', profile: 'p', memories: [{ name: 'n', purpose: 'p', value: 'v' }] }]);
    const keys = (await redis.keys(`${prefix}:{keys}:run:*`)).sort();
    expect(keys).toEqual([
      `${prefix}:{keys}:run:user:{u%7B1%7D}:latest`,
      `${prefix}:{keys}:run:user:{u%7B1%7D}:memories`,
      `${prefix}:{keys}:run:user:{u%7B1%7D}:versions`,
      `${prefix}:{keys}:run:users`,
    ]);
    // Every key lands in the run's Redis Cluster slot, the first tag's (computed here: this Redis is no cluster).
    const tagSlot = crc16(Buffer.from('keys')) % 16384;
    expect(keys.map(keySlot)).toEqual([tagSlot, tagSlot, tagSlot, tagSlot]);
    const mem = JSON.parse((await redis.hget(`${prefix}:{keys}:run:user:{u%7B1%7D}:memories`, 'm1-0')) as string);
    expect(typeof mem.embedding).toBe('string');
    expect(Buffer.from(mem.embedding, 'base64').length).toBe(encoder.dim * 4);
    await store.clear();
    expect(await redis.keys(`${prefix}:{keys}:run:*`)).toEqual([]);
  });
});
