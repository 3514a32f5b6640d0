// A small but real ServeModel for engine tests that must not depend on tfjs: its logits
// are a fixed function of the whole prefix (an FNV hash of the ids seen, fed through the
// project Rng), over a few kept token ids, -Infinity elsewhere, like a trimmed vocabulary.
// Sequences record every feed so tests can see the interleaving.
import type { AdapterHandle, Sequence, ServeModel } from '../../serve/model.ts';
import { EOS_IDS, qwen3Tokenizer } from '../../trainer/tokenizer.ts';
import { Rng } from '../../util/rng.ts';

export interface FeedLog {
  seq: number;
  ids: readonly number[];
}

export function prefixHashModel(opts: { maxContext?: number; eosBias?: number } = {}) {
  const tok = qwen3Tokenizer();
  const kept = [...new Set([...tok.encode(' the cat sat on a mat and then it ran away'), ...EOS_IDS])];
  const feeds: FeedLog[] = [];
  let open = 0;
  let nextSeq = 0;
  const model: ServeModel & { feeds: FeedLog[]; openSequences(): number } = {
    vocabSize: tok.vocabSize,
    maxContext: opts.maxContext ?? 256,
    dir: '(prefix-hash test model)',
    feeds,
    openSequences: () => open,
    newSequence(adapter: AdapterHandle | null): Sequence {
      const id = nextSeq++;
      let h = adapter ? 0x9e3779b9 : 0x811c9dc5;
      let length = 0;
      open++;
      return {
        get length() {
          return length;
        },
        feed(ids) {
          feeds.push({ seq: id, ids: [...ids] });
          for (const t of ids) h = Math.imul(h ^ t, 0x01000193) >>> 0;
          length += ids.length;
          const rng = new Rng(h);
          const logits = new Float32Array(tok.vocabSize).fill(-Infinity);
          for (const k of kept) logits[k] = rng.normal() * 2;
          for (const e of EOS_IDS) logits[e] = (logits[e] as number) + (opts.eosBias ?? -2);
          return logits;
        },
        dispose() {
          open--;
        },
      };
    },
    async loadAdapter() {
      return { dispose() {} };
    },
    dispose() {},
  };
  return model;
}
