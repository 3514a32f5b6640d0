// The policy-turn token filter: what the EBNF (structured/turn/grammar-ebnf.ts) cannot say, applied
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
// Caps: structured/turn/caps.ts. Worst case under the caps alone: 7,764 bytes =
// at most as many tokens (each token is >= 1 byte); rule 3 bounds a turn by max_tokens.
import { TurnCursor, type TurnCaps } from './turn/cursor.ts';
import { MAX_COMPLETION, POLICY_CAPS } from './turn/caps.ts';
import { FIELD_SPACE } from './turn/grammar.ts';

/** Bytes the open field may still gain from a completion: 2 (a character, a space) + 3 (an unfinished character). */
const MAX_RESERVE = 5;
import type { TokenVocab } from './vocab.ts';

export const POLICY_FILTER_VERSION = 1;

/**
 * Per-vocabulary tables, so `apply` works on bitmask words: whole classes of ids are cleared
 * with one AND per word, and only the ids that can go either way are looked at.
 */
interface Tables {
  words: number; // ceil(V / 32)
  lens: Int32Array; // [V] bytes per token
  byLenDesc: Int32Array; // ids, longest first (applyPerId)
  complex: Uint8Array; // [V] 1: has "\n" or "|", is special, or is a stop id: always checked exactly
  complexIds: Int32Array;
  complexMask: Int32Array; // [words] the complex ids
  /** [L][words]: the non-complex ids of at least L bytes (L = 0 .. longest + 1). */
  longer: Int32Array[];
  /**
   * [V] for a non-complex id: what it leaves an open field with, from a clean character
   * boundary: (len << 4) | (pending << 2) | (has a non-space byte << 1) | (ends with " ").
   * Ids with the same value get the same verdict wherever the field is open (see `apply`).
   */
  shape: Int32Array;
}

const tables = new Map<string, Tables>();
const SPACES = new Set([...FIELD_SPACE].map((ch) => ch.charCodeAt(0)));

/** The field shape of a token's bytes (Tables.shape), following TurnCursor.fieldByte. */
function shapeOf(b: Uint8Array): number {
  let pending = 0;
  let nonSpace = 0;
  for (const x of b) {
    if (pending > 0) pending--;
    if (x >= 0xc0 && pending === 0) pending = x < 0xe0 ? 1 : x < 0xf0 ? 2 : 3;
    if (!SPACES.has(x)) nonSpace = 1;
  }
  return (b.length << 4) | (pending << 2) | (nonSpace << 1) | (b[b.length - 1] === 0x20 ? 1 : 0);
}

function tablesFor(vocab: TokenVocab): Tables {
  const hit = tables.get(vocab.key);
  if (hit) return hit;
  const words = Math.ceil(vocab.size / 32);
  const lens = new Int32Array(vocab.size);
  const complex = new Uint8Array(vocab.size);
  const shape = new Int32Array(vocab.size);
  const complexMask = new Int32Array(words);
  const stops = new Set(vocab.stopIds);
  const ids: number[] = [];
  let longest = 0;
  for (let id = 0; id < vocab.size; id++) {
    const b = vocab.bytes(id);
    lens[id] = b.length;
    if (!b.length) continue;
    ids.push(id);
    longest = Math.max(longest, b.length);
    if (vocab.special[id] || stops.has(id) || b.includes(0x0a) || b.includes(0x7c)) {
      complex[id] = 1;
      set(complexMask, id);
    } else shape[id] = shapeOf(b);
  }
  // longer[L] = longer[L + 1] + the non-complex ids of exactly L bytes
  const longer = Array.from({ length: longest + 2 }, () => new Int32Array(words));
  for (const id of ids) if (!complex[id]) set(longer[lens[id] as number] as Int32Array, id);
  for (let L = longest; L >= 0; L--) {
    const at = longer[L] as Int32Array;
    const above = longer[L + 1] as Int32Array;
    for (let w = 0; w < words; w++) at[w] = (at[w] as number) | (above[w] as number);
  }
  const byLenDesc = Int32Array.from(ids.sort((a, b) => (lens[b] as number) - (lens[a] as number) || a - b));
  const t = { words, lens, byLenDesc, complex, complexIds: Int32Array.from(ids.filter((id) => complex[id])), complexMask, longer, shape };
  tables.set(vocab.key, t);
  return t;
}

const has = (mask: Int32Array, id: number) => ((mask[id >>> 5] as number) >>> (id & 31)) & 1;
const clear = (mask: Int32Array, id: number) => {
  mask[id >>> 5] = (mask[id >>> 5] as number) & ~(1 << (id & 31));
};
function set(mask: Int32Array, id: number): void {
  mask[id >>> 5] = (mask[id >>> 5] as number) | (1 << (id & 31));
}

/** One memoised verdict: the reasons other than the budget (rule 3), and the completion length after the token. */
interface Verdict {
  banned: boolean;
  completion: number; // -1: not computed yet (from `after`; none for EOS, which the budget rule leaves alone)
  after?: TurnCursor;
}

/**
 * The cursor's state as a string. With `exactBytes` false the open field's byte count is
 * reduced to "empty or not": a token that cannot reach the field's cap gets the same
 * verdict at every byte count (see `verdict`).
 */
function stateKey(c: TurnCursor, exactBytes: boolean): string {
  const f = c.field;
  const bytes = f ? (exactBytes ? f.bytes : f.bytes === 0 ? 0 : -1) : null;
  return `${c.section}|${c.line}|${c.col}|${c.seg}|${c.segText}|${c.status}|${c.pending}|${c.slack}|${c.slots}|${f ? `${f.cap},${bytes},${+f.nonSpace},${+f.lastSpace}` : ''}|${[...c.names].join('\u0000')}`;
}

export class PolicyTurnFilter {
  private cursor: TurnCursor;
  private position = 0;
  private readonly tables: Tables;
  private readonly stops: Set<number>;
  /** Verdicts by cursor state (stateKey) and id; a few states are kept (a turn revisits line starts). */
  private readonly memo = new Map<string, Map<number, Verdict>>();

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
    const { why, after } = this.walk(id);
    if (why !== null || after === null) return why;
    if (this.nearEnd() && this.overBudget(after.completion().length)) return `the turn could not end within max_tokens=${this.maxTokens}`;
    return null;
  }

  /** Rules 1, 2 and 4 for `id`, and the cursor after its bytes (null for EOS and for banned ids). */
  private walk(id: number): { why: string | null; after: TurnCursor | null } {
    if (this.stops.has(id)) return { why: null, after: null }; // EOS: the grammar alone decides
    if (this.vocab.special[id]) return { why: 'a special token (its text would be dropped from the completion)', after: null };
    const bytes = this.vocab.bytes(id);
    if (!bytes.length) return { why: 'not in the vocabulary', after: null };
    const c = this.cursor.clone();
    for (let i = 0; i < bytes.length; i++) {
      const why = c.push(bytes[i] as number);
      if (why) return { why, after: null };
    }
    const f = c.openField();
    if (f && f.bytes + f.reserve > f.cap) return { why: `the field would pass its cap of ${f.cap} bytes`, after: null };
    return { why: null, after: c };
  }

  /** Far from the end no completion (at most MAX_COMPLETION bytes) can run past max_tokens (rule 3 cannot apply). */
  private nearEnd(): boolean {
    return this.position + 2 + MAX_COMPLETION > this.maxTokens;
  }

  /** Rule 3: this token, a completion of `completion` bytes (one token per byte at worst) and EOS pass max_tokens. */
  private overBudget(completion: number): boolean {
    return this.position + 1 + completion + 1 > this.maxTokens;
  }

  /**
   * banReason(id) !== null, memoised under `key` (a stateKey of the current cursor that
   * determines the verdict for this id). The budget rule is applied afresh: it is the only
   * part that depends on the position, through the completion length kept in the memo.
   */
  private verdict(id: number, key: string): boolean {
    let byId = this.memo.get(key);
    if (!byId) {
      if (this.memo.size >= 32) this.memo.delete(this.memo.keys().next().value as string);
      byId = new Map();
      this.memo.set(key, byId);
    }
    let v = byId.get(id);
    if (!v) {
      const { why, after } = this.walk(id);
      v = after ? { banned: false, completion: -1, after } : { banned: why !== null, completion: -1 };
      byId.set(id, v);
    }
    if (v.banned || !this.nearEnd()) return v.banned;
    if (v.completion < 0) {
      if (!v.after) return false; // EOS: the budget rule does not apply
      v.completion = (v.after as TurnCursor).completion().length;
      delete v.after;
    }
    return this.overBudget(v.completion);
  }

  /**
   * Clears in `mask` (xgrammar's bitmask for this position, modified in place) every id the
   * filter bans: the same result as asking `banReason` for every set bit (tested id by id),
   * computed on bitmask words.
   *
   * - Outside fields (line starts, literals, enums: sparse masks) and mid-character: every
   *   set bit, its verdict memoised by the exact cursor state (a turn starts many lines in
   *   the same state).
   * - In a field (or the literal that leads into one), ids with "\n"/"|" (the complex ids)
   *   are checked one by one; one that cannot reach the field's cap (len + MAX_RESERVE <= room)
   *   gets the same verdict at every byte count of the field, so it is memoised across the
   *   field's positions.
   * - Other ids (text without "\n"/"|") either stay in the leading literal or end in the
   *   field. Longer than the room: banned, one AND per word. Far from the cap and from
   *   max_tokens: allowed, untouched. In between, in an open field, the verdict depends only
   *   on the token's shape (Tables.shape: length, unfinished character, spaces): one check
   *   per shape, applied to its ids. A slot name with names already taken is the exception
   *   (a repeated name changes what the field needs): those ids are checked one by one.
   */
  apply(mask: Int32Array): void {
    const c = this.cursor;
    const room = c.fieldRoom();
    const ft = c.fieldTail();
    if (room === null || ft === null) {
      const key = stateKey(c, true);
      return this.eachSetBit(mask, null, (id) => this.verdict(id, key));
    }
    const { lens, complexMask, longer, shape } = this.tables;
    const fieldKey = stateKey(c, false);
    const exactKey = stateKey(c, true);
    this.eachSetBit(mask, complexMask, (id) => this.verdict(id, (lens[id] as number) + MAX_RESERVE <= room ? fieldKey : exactKey));
    // A token without "\n"/"|" ends in the field (or the literal before it), leaving a
    // completion of ft.tail + at most MAX_RESERVE bytes.
    const budget = this.maxTokens - this.position - 2 - ft.tail;
    const byShape = c.field !== null && !(c.seg === 1 && c.line === 'slot' && c.names.size > 0); // NAME = 1
    const shapes = new Map<number, boolean>();
    const check = byShape
      ? (id: number) => {
          const s = shape[id] as number;
          let v = shapes.get(s);
          if (v === undefined) shapes.set(s, (v = this.banReason(id) !== null));
          return v;
        }
      : (id: number) => this.verdict(id, exactKey);
    if (budget < 0) {
      // Even a field that needs nothing more cannot take another byte: only literal bytes.
      return andNot(mask, longer[Math.min(ft.litRest + 1, longer.length - 1)] as Int32Array);
    }
    if (budget < MAX_RESERVE) return this.eachSetBit(mask, longer[1] as Int32Array, check); // the last few tokens: every one
    // Plenty of budget: only tokens long enough to reach the cap can be banned.
    if (room + 1 < longer.length) andNot(mask, longer[room + 1] as Int32Array);
    const from = Math.max(1, room + 1 - MAX_RESERVE);
    if (from < longer.length) this.eachSetBit(mask, longer[from] as Int32Array, check);
  }

  /** For every id set in `mask` (and in `within`, when given): clear it when `banned(id)`. */
  private eachSetBit(mask: Int32Array, within: Int32Array | null, banned: (id: number) => boolean): void {
    const size = this.vocab.size;
    for (let w = 0; w < mask.length; w++) {
      let word = within ? (mask[w] as number) & (within[w] as number) : (mask[w] as number);
      while (word !== 0) {
        const bit = 31 - Math.clz32(word & -word);
        word &= word - 1;
        const id = (w << 5) | bit;
        if (id < size && banned(id)) clear(mask, id);
      }
    }
  }

  /**
   * The filter before issue 22, id by id: kept as the baseline bench/serve/grammar.ts
   * measures `apply` against (same result).
   */
  applyPerId(mask: Int32Array): void {
    const room = this.cursor.fieldRoom();
    const ft = this.cursor.fieldTail();
    if (room === null || ft === null) return this.checkEverySetBit(mask, () => true);
    const { lens, byLenDesc, complex, complexIds } = this.tables;
    const budget = this.maxTokens - this.position - 2 - ft.tail;
    if (budget < 0) {
      for (const id of complexIds) if (has(mask, id) && this.banReason(id)) clear(mask, id);
      return this.checkEverySetBit(mask, (id) => !complex[id] && (lens[id] as number) > ft.litRest, true);
    }
    if (budget < MAX_RESERVE) return this.checkEverySetBit(mask, () => true);
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
    this.eachSetBit(mask, null, (id) => pick(id) && (banAll || this.banReason(id) !== null));
  }

  /** Advance past the sampled id. */
  accept(id: number): void {
    this.position++;
    if (this.stops.has(id)) return;
    for (const b of this.vocab.bytes(id)) this.cursor.push(b);
  }
}

/** mask &= ~off, word by word. */
function andNot(mask: Int32Array, off: Int32Array): void {
  for (let w = 0; w < mask.length; w++) mask[w] = (mask[w] as number) & ~(off[w] as number);
}
