// ONE conformance suite for every UserStore (STYLE.md §8): run by user-store-memory.test.ts
// and user-store-redis.test.ts against the in-memory and the Redis store.
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { cosine } from '../../core/encoder.ts';
import { InputError } from '../../util/errors.ts';
import type { UserState } from '../../data/schema.ts';
import type { UserStore } from '../../rollout/user-store.ts';

export interface StoreFactory {
  make(): Promise<UserStore>;
  /** After each test: clean up and return anything the store left behind (must be empty). */
  leftovers(store: UserStore): Promise<string[]>;
}

export const encoder = new HashedEncoder(256);
const opts = { candidates: 15, topK: 3 };

const alice: UserState = {
  userId: 'alice',
  profile: 'Alice is a PhD student in ecology.',
  memories: [
    { name: 'budget', purpose: 'spending limit', value: 'under 1200 EUR for a laptop', sourceInstance: 'i1' },
    { name: 'field_sites', purpose: 'where fieldwork happens', value: 'wetlands in the Camargue' },
  ],
};
const bob: UserState = { userId: 'bob@lab{1}', profile: '', memories: [] };

export function userStoreConformance(name: string, factory: StoreFactory): void {
  describe(`UserStore conformance: ${name}`, () => {
    let store: UserStore;
    beforeEach(async () => {
      store = await factory.make();
    });
    afterEach(async () => {
      expect(await factory.leftovers(store)).toEqual([]);
    });

    it('an unknown user is the empty version 0', async () => {
      expect(await store.latestVersion('nobody')).toBe(0);
      expect(await store.read('nobody', 0)).toEqual({ userId: 'nobody', version: 0, profile: '', memories: [] });
      expect(await store.search('nobody', 0, 'budget', opts)).toEqual({ examined: 0, hits: [] });
      await expect(store.read('nobody', 1)).rejects.toThrow(/has no state version 1 \(latest 0\)/);
    });

    it('init writes version 1 with unit embeddings; twice is refused', async () => {
      await store.init([alice, bob]);
      expect(await store.latestVersion('alice')).toBe(1);
      expect(await store.latestVersion('bob@lab{1}')).toBe(1);
      const s = await store.read('alice', 1);
      expect(s.profile).toBe(alice.profile);
      expect(
        s.memories.map(({ name, purpose, value, sourceInstance, id, addedIn, encoder: e }) => ({ name, purpose, value, sourceInstance, id, addedIn, e })),
      ).toEqual([
        { ...alice.memories[0], id: 'm1-0', addedIn: 1, e: encoder.name },
        { ...alice.memories[1], sourceInstance: undefined, id: 'm1-1', addedIn: 1, e: encoder.name },
      ]);
      // the stored vector is the encoder's vector of "name: purpose: value", bit for bit (f32)
      const [v] = await encoder.embed(['budget: spending limit: under 1200 EUR for a laptop']);
      expect(Array.from(s.memories[0]!.embedding)).toEqual(Array.from(v!));
      expect(cosine(s.memories[0]!.embedding, s.memories[0]!.embedding)).toBeCloseTo(1, 5);
      await expect(store.init([alice])).rejects.toBeInstanceOf(InputError);
      expect((await store.users()).sort()).toEqual(['alice', 'bob@lab{1}']);
      await store.clear();
    });

    it('updates write n+1; older versions stay readable and unchanged', async () => {
      await store.init([alice]);
      const v1 = await store.read('alice', 1);
      const v2n = await store.update('alice', { memories: [{ name: 'os', purpose: 'operating system', value: 'Linux only' }] });
      expect(v2n).toBe(2);
      const v3n = await store.update('alice', {
        memories: [
          { name: 'budget', purpose: 'spending limit', value: 'under 1500 EUR' }, // same name, new value: replaces
          { name: 'os', purpose: 'operating system', value: 'Linux only' }, // identical: skipped
        ],
        profileSentence: 'She prefers open-source tools.',
      });
      expect(v3n).toBe(3);
      expect(await store.read('alice', 1)).toEqual(v1);
      const v3 = await store.read('alice', 3);
      expect(v3.memories.map((m) => [m.id, m.name, m.value])).toEqual([
        ['m1-1', 'field_sites', 'wetlands in the Camargue'],
        ['m2-0', 'os', 'Linux only'],
        ['m3-0', 'budget', 'under 1500 EUR'],
      ]);
      expect(v3.profile).toBe('Alice is a PhD student in ecology. She prefers open-source tools.');
      // nothing new: no version written
      expect(
        await store.update('alice', {
          memories: [{ name: 'os', purpose: 'operating system', value: 'Linux only' }],
          profileSentence: 'she prefers open-source tools.',
        }),
      ).toBe(3);
      expect(await store.latestVersion('alice')).toBe(3);
      // an unseen user starts from the empty state
      expect(await store.update('carol', { memories: [{ name: 'lang', purpose: 'language', value: 'French' }] })).toBe(1);
      await store.clear();
    });

    it('a snapshot stays fixed while new versions are written concurrently', async () => {
      await store.init([alice]);
      const before = await store.search('alice', 1, 'which operating system', opts);
      const writes = Array.from({ length: 8 }, (_, i) =>
        store.update('alice', { memories: [{ name: `os_${i}`, purpose: 'operating system preference', value: `operating system number ${i}` }] }),
      );
      const reads = Array.from({ length: 8 }, () => store.search('alice', 1, 'which operating system', opts));
      const [versions, during] = await Promise.all([Promise.all(writes), Promise.all(reads)]);
      expect([...versions].sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]); // no update lost
      for (const r of during) expect(r).toEqual(before);
      expect(await store.search('alice', 1, 'which operating system', opts)).toEqual(before);
      const latest = await store.read('alice', 9);
      expect(latest.memories).toHaveLength(10);
      const after = await store.search('alice', 9, 'which operating system', opts);
      expect(after.hits).toHaveLength(3);
      expect(after.hits.every((h) => h.name.startsWith('os_'))).toBe(true);
      await store.clear();
    });

    it('retrieval examines at most 15 candidates and returns at most 3, best first', async () => {
      const topics = [
        'hiking trails',
        'jazz records',
        'sourdough bread',
        'chess openings',
        'bird watching',
        'vintage cameras',
        'marathon training',
        'indoor plants',
        'board games',
        'sailing lessons',
        'pottery class',
        'film noir',
        'tea tasting',
        'rock climbing',
        'woodworking',
        'poetry readings',
      ];
      const memories = [
        ...['laptop budget under 1200 EUR', 'travel budget 300 EUR per month', 'budget for books 50 EUR', 'conference budget from the grant'].map((v, i) => ({
          name: `budget_${i}`,
          purpose: 'spending limit',
          value: v,
        })),
        ...topics.map((t, i) => ({ name: `hobby_${i}`, purpose: 'free time', value: t })),
      ];
      await store.init([{ userId: 'dana', profile: '', memories }]);
      const r = await store.search('dana', 1, 'what is the laptop budget', opts);
      expect(r.examined).toBe(15);
      expect(r.hits).toHaveLength(3);
      expect(r.hits[0]!.value).toBe('laptop budget under 1200 EUR');
      expect(r.hits.every((h) => h.name.startsWith('budget_'))).toBe(true);
      for (let i = 1; i < r.hits.length; i++) expect(r.hits[i - 1]!.score).toBeGreaterThanOrEqual(r.hits[i]!.score);
      const small = await store.search('dana', 1, 'laptop budget', { candidates: 2, topK: 1 });
      expect(small.examined).toBe(2);
      expect(small.hits.map((h) => h.value)).toEqual(['laptop budget under 1200 EUR']);
      await store.clear();
    });

    it('prune forgets old versions but keeps memories later versions still list', async () => {
      await store.init([alice]);
      await store.update('alice', { memories: [{ name: 'os', purpose: 'operating system', value: 'Linux' }] });
      await store.update('alice', { memories: [{ name: 'budget', purpose: 'spending limit', value: '1500 EUR' }] });
      await store.prune('alice', 3);
      await expect(store.read('alice', 1)).rejects.toThrow(/no state version 1 \(latest 3\)/);
      await expect(store.read('alice', 2)).rejects.toBeInstanceOf(InputError);
      const v3 = await store.read('alice', 3);
      expect(v3.memories.map((m) => m.id)).toEqual(['m1-1', 'm2-0', 'm3-0']);
      await store.prune('alice', 99); // the latest is always kept
      expect((await store.read('alice', 3)).memories).toHaveLength(3);
      await store.clear();
    });

    it('dump and restore round-trip every kept version exactly', async () => {
      await store.init([alice, bob]);
      await store.update('alice', { memories: [{ name: 'os', purpose: 'operating system', value: 'Linux' }] });
      await store.update('alice', { memories: [{ name: 'budget', purpose: 'spending limit', value: '1500 EUR' }], profileSentence: 'Works on wetlands.' });
      await store.prune('alice', 2);
      const dump = await store.dump();
      const json = JSON.parse(JSON.stringify(dump));
      const snaps = [await store.read('alice', 2), await store.read('alice', 3), await store.read('bob@lab{1}', 1)];
      const search = await store.search('alice', 3, 'budget', opts);
      await store.clear();
      expect(await store.users()).toEqual([]);
      await store.restore(json);
      expect(await store.dump()).toEqual(dump);
      expect([await store.read('alice', 2), await store.read('alice', 3), await store.read('bob@lab{1}', 1)]).toEqual(snaps);
      expect(await store.search('alice', 3, 'budget', opts)).toEqual(search);
      expect(await store.latestVersion('alice')).toBe(3);
      await expect(store.read('alice', 1)).rejects.toBeInstanceOf(InputError);
      await expect(store.restore({ format: 'other' } as never)).rejects.toThrow(/not a gsteer user-store dump/);
      await store.clear();
    });
  });
}
