// Automatic prefix caching (vLLM's design): a prompt is cut into blocks of `blockSize`
// positions; block j's key is a hash of block j-1's key and block j's token ids, chained from
// a root per adapter namespace, so a key names a whole prefix. A new prompt reuses the KV of
// the longest run of cached blocks from its start. Three kinds of entry:
//   full block  [j*bs, (j+1)*bs)                 key H(parent, 'B', ids)
//   tail        [j*bs, n) of a prompt, n < (j+1)*bs   key H(parent, 'T', ids)
// and either may carry the logits of its last position when a prompt ended there, which is
// what lets G identical prompts (a GRPO group) skip their prefill entirely after the first.
// The cache is LRU over leaves (an entry no cached entry extends), bounded by bytes; a
// parent is evicted only after its children, so what stays is always reachable.
import { createHash } from 'node:crypto';
import type { KvBlock } from './model.ts';

export interface CacheEntry {
  readonly key: string;
  readonly parent: string | null;
  readonly block: KvBlock;
  /** Logits of the block's last position (a row over the model's support), when a prompt ended there. */
  logits: Float32Array | null;
  children: number;
}

export interface PrefixCacheStats {
  blocks: number;
  bytes: number;
  evictions: number;
}

/** Keys of the attention segments of a prompt (segmentsOf(0, n, blockSize) in batch-step.ts): full blocks, then a tail if n is not a multiple. */
export function blockKeys(namespace: string, promptIds: readonly number[], blockSize: number): string[] {
  const keys: string[] = [];
  let parent = createHash('sha256').update(`gsteer-prefix/1 ${namespace}`).digest();
  for (let start = 0; start < promptIds.length; start += blockSize) {
    const ids = promptIds.slice(start, start + blockSize);
    const h = createHash('sha256')
      .update(parent)
      .update(ids.length === blockSize ? 'B' : 'T');
    h.update(new Uint8Array(Int32Array.from(ids).buffer));
    parent = h.digest();
    keys.push(parent.toString('base64'));
  }
  return keys;
}

export class PrefixCache {
  /** Insertion / use order = LRU order (Map iterates oldest first). */
  private readonly entries = new Map<string, CacheEntry & { namespace: string }>();
  private bytes = 0;
  private evictions = 0;

  constructor(
    readonly capacityBytes: number,
    readonly blockSize: number,
    /** Bytes of one logits row as stored (support size x 4). */
    private readonly logitsBytes: number,
  ) {}

  get enabled(): boolean {
    return this.capacityBytes > 0;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The entry, not marked as used (for planning: batch-plan.ts). */
  peek(key: string): CacheEntry | undefined {
    return this.entries.get(key);
  }

  /** The entry, marked as just used. */
  get(key: string): CacheEntry | undefined {
    const e = this.entries.get(key);
    if (e) this.touch(e);
    return e;
  }

  /**
   * Keep a computed block (the cache owns it from here: it is freed on eviction, or now when
   * the key is already cached, in which case only missing logits are added).
   */
  put(namespace: string, key: string, parent: string | null, block: KvBlock, logits: Float32Array | null): void {
    const have = this.entries.get(key);
    if (have) {
      block.dispose();
      if (logits && !have.logits) {
        have.logits = logits;
        this.bytes += this.logitsBytes;
      }
      this.touch(have);
    } else {
      const p = parent === null ? undefined : this.entries.get(parent);
      if (parent !== null && !p) return void block.dispose(); // the parent was evicted meanwhile: unreachable
      if (p) p.children++;
      this.entries.set(key, { key, parent, block, logits, children: 0, namespace });
      this.bytes += block.bytes + (logits ? this.logitsBytes : 0);
    }
    this.shrink();
  }

  /** Drop everything cached for a namespace (its adapter was unloaded). */
  dropNamespace(namespace: string): void {
    for (const e of [...this.entries.values()]) if (e.namespace === namespace) this.remove(e, false);
  }

  stats(): PrefixCacheStats {
    return { blocks: this.entries.size, bytes: this.bytes, evictions: this.evictions };
  }

  clear(): void {
    for (const e of [...this.entries.values()]) this.remove(e, false);
  }

  private touch(e: CacheEntry & { namespace: string }): void {
    this.entries.delete(e.key);
    this.entries.set(e.key, e);
  }

  /** Evict least recently used leaves until the cache fits. */
  private shrink(): void {
    while (this.bytes > this.capacityBytes) {
      let victim: (CacheEntry & { namespace: string }) | undefined;
      for (const e of this.entries.values()) {
        if (e.children === 0) {
          victim = e;
          break;
        }
      }
      if (!victim) return;
      this.remove(victim, true);
    }
  }

  private remove(e: CacheEntry & { namespace: string }, evicted: boolean): void {
    if (!this.entries.delete(e.key)) return;
    e.block.dispose();
    this.bytes -= e.block.bytes + (e.logits ? this.logitsBytes : 0);
    if (e.parent !== null) {
      const p = this.entries.get(e.parent);
      if (p) p.children--;
    }
    if (evicted) this.evictions++;
  }
}
