// The policy-turn token filter: what the EBNF (core/turn/grammar-ebnf.ts) cannot say, applied
// by gsteer serve after xgrammar's mask (request field `gsteer_token_filter: "policy_turn"`)
// and replayed by the trainer. It bans a token when, after its bytes,
//   1. a slot name repeats in STATE (not context-free; parseTurn's `duplicate_slot`),
//   2. a field passes its byte cap (POLICY_CAPS), or STATE gets more than `slots` lines, or
//      the whitespace outside fields (blank lines, padding) passes `slack` bytes, or
//   3. the turn could no longer end within max_tokens: tokens so far + the shortest
//      completion (TurnCursor.completion, one token per byte at worst) + EOS > max_tokens, or
//   4. the token is an added special token other than EOS (<|im_start|>, ...): xgrammar
//      reads it as literal text, but the completion's text drops it (skip_special_tokens),
//      so the turn parseTurn sees would differ from the one the grammar checked.
// Rule 3 makes every constrained turn end with EOS by max_tokens (never `truncated`), and
// the completion it relies on only uses bytes rules 1-2 allow, so the filter never leaves
// a position with no token (given the 256 byte tokens, which trimmed models keep).
// It depends only on the completion's bytes and token count so far, so a replay of the
// same ids gives the same bans.
//
// Caps: core/turn/caps.ts. Worst case under the caps alone: 7,764 bytes =
// at most as many tokens (each token is >= 1 byte); rule 3 bounds a turn by max_tokens.
import { TurnCursor, type TurnCaps } from '../../core/turn/cursor.ts';
import { MAX_COMPLETION, POLICY_CAPS } from '../../core/turn/caps.ts';

/** Bytes the open field may still gain from a completion: 2 (a character, a space) + 3 (an unfinished character). */
const MAX_RESERVE = 5;
import type { TokenVocab } from './vocab.ts';

export const POLICY_FILTER_VERSION = 1;
interface Tables {
  lens: Int32Array; // [V] bytes per token
  byLenDesc: Int32Array; // ids, longest first
  complex: Uint8Array; // [V] 1: has "\n" or "|", is special, or is a stop id: always checked exactly
  complexIds: Int32Array;
}

const tables = new Map<string, Tables>();

function tablesFor(vocab: TokenVocab): Tables {
  const hit = tables.get(vocab.key);
  if (hit) return hit;
  const lens = new Int32Array(vocab.size);
  const complex = new Uint8Array(vocab.size);
  const stops = new Set(vocab.stopIds);
  const ids: number[] = [];
  for (let id = 0; id < vocab.size; id++) {
    const b = vocab.bytes(id);
    lens[id] = b.length;
    if (!b.length) continue;
    ids.push(id);
    if (vocab.special[id] || stops.has(id) || b.includes(0x0a) || b.includes(0x7c)) complex[id] = 1;
  }
  const byLenDesc = Int32Array.from(ids.sort((a, b) => (lens[b] as number) - (lens[a] as number) || a - b));
  const t = { lens, byLenDesc, complex, complexIds: Int32Array.from(ids.filter((id) => complex[id])) };
  tables.set(vocab.key, t);
  return t;
}

const has = (mask: Int32Array, id: number) => ((mask[id >>> 5] as number) >>> (id & 31)) & 1;
const clear = (mask: Int32Array, id: number) => {
  mask[id >>> 5] = (mask[id >>> 5] as number) & ~(1 << (id & 31));
};

export class PolicyTurnFilter {
  private cursor: TurnCursor;
  private position = 0;
  private readonly tables: Tables;
  private readonly stops: Set<number>;

  constructor(
    private readonly vocab: TokenVocab,
    private readonly maxTokens: number,
    caps: TurnCaps = POLICY_CAPS,
  ) {
    this.cursor = new TurnCursor(caps);
    this.tables = tablesFor(vocab);
    this.stops = new Set(vocab.stopIds);
  }

  /** Why `id` is banned at the current position (null: allowed). Exact; the reference for `apply`. */
  banReason(id: number): string | null {
    if (this.stops.has(id)) return null; // EOS: the grammar alone decides
    if (this.vocab.special[id]) return 'a special token (its text would be dropped from the completion)';
    const bytes = this.vocab.bytes(id);
    if (!bytes.length) return 'not in the vocabulary';
    const c = this.cursor.clone();
    for (let i = 0; i < bytes.length; i++) {
      const why = c.push(bytes[i] as number);
      if (why) return why;
    }
    const f = c.openField();
    if (f && f.bytes + f.reserve > f.cap) return `the field would pass its cap of ${f.cap} bytes`;
    // Far from the end, no completion (at most MAX_COMPLETION bytes) can run past max_tokens.
    if (this.position + 2 + MAX_COMPLETION > this.maxTokens && this.position + 1 + c.completion().length + 1 > this.maxTokens)
      return `the turn could not end within max_tokens=${this.maxTokens}`;
    return null;
  }

  /**
   * Clears in `mask` (xgrammar's bitmask for this position, modified in place) every id the
   * filter bans. Same result as asking `banReason` for every set bit; inside a field with
   * room left, only the ids that can break a rule are looked at.
   */
  apply(mask: Int32Array): void {
    // Outside fields (structure: sparse masks) or mid-character: every allowed id, exactly.
    const room = this.cursor.fieldRoom();
    const ft = this.cursor.fieldTail();
    if (room === null || ft === null) return this.checkEverySetBit(mask, () => true);
    const { lens, byLenDesc, complex, complexIds } = this.tables;
    // A token without "\n"/"|" (not `complex`) either stays in the literal before the field
    // or ends in the field, leaving a completion of ft.tail + at most MAX_RESERVE bytes.
    const budget = this.maxTokens - this.position - 2 - ft.tail;
    if (budget < 0) {
      // Even a field that needs nothing more cannot take another byte: only literal bytes and closing tokens.
      for (const id of complexIds) if (has(mask, id) && this.banReason(id)) clear(mask, id);
      return this.checkEverySetBit(mask, (id) => !complex[id] && (lens[id] as number) > ft.litRest, true);
    }
    if (budget < MAX_RESERVE) return this.checkEverySetBit(mask, () => true); // the last few tokens
    // Plenty of budget: only "\n"/"|" tokens and tokens long enough to reach the cap can be banned.
    for (const id of complexIds) if (has(mask, id) && this.banReason(id)) clear(mask, id);
    for (const id of byLenDesc) {
      const len = lens[id] as number;
      if (len + MAX_RESERVE <= room) break;
      if (complex[id] || !has(mask, id)) continue;
      if (len > room || this.banReason(id)) clear(mask, id);
    }
  }

  /** For every set bit with `pick(id)`: clear it when banned (or always, with `banAll`). */
  private checkEverySetBit(mask: Int32Array, pick: (id: number) => boolean, banAll = false): void {
    for (let w = 0; w < mask.length; w++) {
      let word = mask[w] as number;
      while (word !== 0) {
        const bit = 31 - Math.clz32(word & -word);
        word &= word - 1;
        const id = (w << 5) | bit;
        if (id < this.vocab.size && pick(id) && (banAll || this.banReason(id))) clear(mask, id);
      }
    }
  }

  /** Advance past the sampled id. */
  accept(id: number): void {
    this.position++;
    if (this.stops.has(id)) return;
    for (const b of this.vocab.bytes(id)) this.cursor.push(b);
  }
}
