// A small but real ServeModel for engine tests that must not depend on tfjs: its logits
// are a fixed function of the whole prefix (an FNV hash of the ids seen, fed through the
// project Rng), over a few kept token ids (its support), like a trimmed vocabulary.
// Sequences record every feed (and `steps` every batched forward pass) so tests can see the
// interleaving, the batching, and which prompt tokens were computed rather than cached.
import type { AdapterHandle, KvBlock, Sequence, ServeModel } from '../../serve/model.ts';
import { gatherRow } from '../../serve/sampling.ts';
import { EOS_IDS, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { Rng } from '../../util/rng.ts';

export interface FeedLog {
  seq: number;
  ids: readonly number[];
}

interface HashSequence extends Sequence {
  readonly id: number;
  readonly ids: number[];
  apply(ids: readonly number[]): void;
}

interface HashBlock extends KvBlock {
  readonly ids: readonly number[];
}

export function prefixHashModel(opts: { maxContext?: number; eosBias?: number } = {}) {
  const tok = qwen3Tokenizer();
  const kept = [...new Set([...tok.encode(' the cat sat on a mat and then it ran away'), ...EOS_IDS])];
  const support = Int32Array.from(kept).sort();
  const feeds: FeedLog[] = [];
  const steps: FeedLog[][] = [];
  let open = 0;
  let blocks = 0;
  let nextSeq = 0;
  const model: ServeModel & { feeds: FeedLog[]; steps: FeedLog[][]; openSequences(): number; openBlocks(): number } = {
    vocabSize: tok.vocabSize,
    maxContext: opts.maxContext ?? 256,
    dir: '(prefix-hash test model)',
    support,
    backend: { name: 'prefix-hash', batchInvariant: true },
    feeds,
    steps,
    openSequences: () => open,
    openBlocks: () => blocks,
    newSequence(adapter: AdapterHandle | null): Sequence {
      const id = nextSeq++;
      let h = adapter ? 0x9e3779b9 : 0x811c9dc5;
      const ids: number[] = [];
      open++;
      const seq: HashSequence = {
        id,
        ids,
        get length() {
          return ids.length;
        },
        apply(xs) {
          for (const t of xs) h = Math.imul(h ^ t, 0x01000193) >>> 0;
          ids.push(...xs);
        },
        feed(xs) {
          feeds.push({ seq: id, ids: [...xs] });
          seq.apply(xs);
          const rng = new Rng(h);
          const logits = new Float32Array(tok.vocabSize).fill(-Infinity);
          for (const k of kept) logits[k] = rng.normal() * 2;
          for (const e of EOS_IDS) logits[e] = (logits[e] as number) + (opts.eosBias ?? -2);
          return gatherRow(logits, support); // the row over `support`, as ServeModel gives logits
        },
        dispose() {
          open--;
        },
      };
      return seq;
    },
    forward(items) {
      steps.push(items.map((it) => ({ seq: (it.seq as HashSequence).id, ids: [...it.ids] })));
      return items.map((it) => {
        const logits = it.seq.feed(it.ids);
        return it.logits ? logits : null;
      });
    },
    saveBlock(seq, start, end): HashBlock {
      blocks++;
      let freed = false;
      return {
        length: end - start,
        bytes: 4 * (end - start),
        ids: (seq as HashSequence).ids.slice(start, end),
        dispose() {
          if (!freed) blocks--;
          freed = true;
        },
      };
    },
    extend(seq, bs) {
      for (const b of bs) (seq as HashSequence).apply((b as HashBlock).ids);
    },
    async loadAdapter() {
      return { dispose() {} };
    },
    dispose() {},
  };
  return model;
}
