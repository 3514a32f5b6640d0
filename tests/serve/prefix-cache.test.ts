// Prefix cache keys (chained block hashes, per namespace) and the byte-bounded LRU over
// leaves: what is evicted, what stays reachable, what is freed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { KvBlock } from '../../serve/model.ts';
import { blockKeys, PrefixCache } from '../../serve/prefix-cache.ts';

describe('blockKeys', () => {
  it('a key names its whole prefix: equal prefixes share keys, a change at block j changes keys j.. only', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 151_000 }), { minLength: 1, maxLength: 60 }), fc.nat(), fc.integer({ min: 1, max: 9 }), (ids, at, bs) => {
        const keys = blockKeys('base', ids, bs);
        expect(keys).toHaveLength(Math.ceil(ids.length / bs));
        // a longer prompt with the same start: the same keys for every full block of the shorter one
        const longer = blockKeys('base', [...ids, 7, 7, 7], bs);
        const full = Math.floor(ids.length / bs);
        expect(longer.slice(0, full)).toEqual(keys.slice(0, full));
        const i = at % ids.length;
        const changed = blockKeys(
          'base',
          ids.map((x, k) => (k === i ? x + 1 : x)),
          bs,
        );
        const j = Math.floor(i / bs);
        expect(changed.slice(0, j)).toEqual(keys.slice(0, j));
        changed.slice(j).forEach((k, n) => expect(k).not.toBe(keys[j + n]));
      }),
      { numRuns: 200, seed: 3 },
    );
  });

  it('namespaces (adapters) and block kinds (full vs tail) never share keys', () => {
    const ids = [1, 2, 3, 4, 5, 6];
    expect(blockKeys('base', ids, 3)).not.toContain(blockKeys('lora-1', ids, 3)[0]);
    // [1, 2, 3] as the full block of a size-3 cut vs the tail of a size-4 cut
    expect(blockKeys('base', [1, 2, 3], 3)[0]).not.toBe(blockKeys('base', [1, 2, 3], 4)[0]);
  });
});

function blocks() {
  let live = 0;
  const make = (bytes: number): KvBlock => {
    live++;
    let freed = false;
    return {
      length: 1,
      bytes,
      dispose() {
        if (!freed) live--;
        freed = true;
      },
    };
  };
  return { make, live: () => live };
}

describe('PrefixCache', () => {
  it('evicts the least recently used leaf first; a parent stays while a child is cached', () => {
    const b = blocks();
    const c = new PrefixCache(300, 1, 10);
    c.put('base', 'a', null, b.make(100), null);
    c.put('base', 'a1', 'a', b.make(100), null);
    c.put('base', 'b', null, b.make(100), null);
    c.get('a1'); // use order: a, b, a1
    c.put('base', 'b1', 'b', b.make(100), null); // 400 > 300 bytes: a and b are older but have children; a1 is the oldest leaf
    expect(c.has('a1')).toBe(false);
    expect(['a', 'b', 'b1'].every((k) => c.has(k))).toBe(true);
    expect(c.stats()).toEqual({ blocks: 3, bytes: 300, evictions: 1 });
    expect(b.live()).toBe(3);
  });

  it('keeps within the byte budget, counting logits, and frees what it drops', () => {
    const b = blocks();
    const c = new PrefixCache(250, 1, 50);
    c.put('base', 'a', null, b.make(100), new Float32Array(3)); // 150
    c.put('base', 'b', null, b.make(100), null); // 250
    c.put('base', 'c', null, b.make(10), null); // 260 > 250: a (oldest leaf) goes
    expect(c.has('a')).toBe(false);
    expect(c.stats()).toEqual({ blocks: 2, bytes: 110, evictions: 1 });
    expect(b.live()).toBe(2);
  });

  it('a key already cached: the new copy is freed and missing logits are added', () => {
    const b = blocks();
    const c = new PrefixCache(1000, 1, 40);
    c.put('base', 'a', null, b.make(100), null);
    c.put('base', 'a', null, b.make(100), new Float32Array(10));
    expect(b.live()).toBe(1);
    expect(c.get('a')?.logits).toHaveLength(10);
    expect(c.stats().bytes).toBe(140);
  });

  it('a block whose parent is gone is not kept (it could never be reached)', () => {
    const b = blocks();
    const c = new PrefixCache(1000, 1, 0);
    c.put('base', 'x1', 'x', b.make(10), null);
    expect(c.has('x1')).toBe(false);
    expect(b.live()).toBe(0);
  });

  it('drops a namespace (an unloaded adapter) without counting evictions', () => {
    const b = blocks();
    const c = new PrefixCache(1000, 1, 0);
    c.put('lora-1', 'a', null, b.make(10), null);
    c.put('lora-1', 'a1', 'a', b.make(10), null);
    c.put('base', 'z', null, b.make(10), null);
    c.dropNamespace('lora-1');
    expect(c.stats()).toEqual({ blocks: 1, bytes: 10, evictions: 0 });
    expect(b.live()).toBe(1);
  });
});
