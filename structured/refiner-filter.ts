// The refiner-turn token filter (request field `gsteer_token_filter: "refiner_turn"`, on top of
// the QREF refiner grammar, structured/qref/turn-ebnf.ts): what the grammar cannot say about length.
// It bans a token when, after its bytes,
//   1. the turn could no longer end within max_tokens: tokens so far + 1 + the shortest
//      completion (in bytes: one token per byte at worst) + EOS > max_tokens, or
//   2. the rationale passes REFINER_FILTER_CAPS.rationale bytes or a query passes
//      REFINER_FILTER_CAPS.query (qref.turn's default caps, in characters; the parser counts the
//      trimmed field's characters, the filter every byte of it: a character is at least one byte,
//      and so is each U+FFFD a broken sequence decodes to, so the filter is never more lenient),
// and it bans added special tokens other than EOS (xgrammar reads them as literal text, the
// completion's text drops them, as the policy filter's rule 4). So every turn sampled under
// grammar + filter ends with EOS by max_tokens and within the default caps: never `truncated`,
// never `*_too_long` (with caps at least the defaults). The shortest completion follows the grammar's line structure:
//
//   at a line start before "RATIONALE:"    "RATIONALE:" + mark + "\nQUERIES:\n- " + mark   24 bytes
//   after spaces there (a blank line)      "\n" first                                      25
//   k bytes into "RATIONALE:"              10 - k + 1 + 13
//   after "RATIONALE:" (spaces)            mark + "\nQUERIES:\n- " + mark                  14
//   in the rationale line                  "\nQUERIES:\n- " + mark                         13
//   at a line start after the rationale    "QUERIES:\n- " + mark                           12
//   after spaces there (a blank line)      13
//   k bytes into "QUERIES:"                8 - k + 4
//   after "QUERIES:" (spaces)              "\n- " + mark                                   4
//   at a line start after "QUERIES:"       "- " + mark                                     3
//   after spaces there (a blank line)      4
//   after "-" / after "- " (spaces)        2 / 1
//   in a query line, or after one          0 (the turn may end)
//
// plus the continuation bytes a multi-byte character still owes. The state depends only on
// the completion's bytes, so the trainer's replay of the same ids gives the same bans. From
// any state the shortest completion uses single-byte tokens, which every vocabulary keeps, so
// the filter never leaves a position with no token once max_tokens >= REFINER_MIN_TOKENS.
import { QUERIES_HEADER, RATIONALE_HEADER } from './qref/turn.ts';
import { bitIndices } from '../util/bits.ts';
import type { TokenVocab } from './vocab.ts';

export const REFINER_FILTER_VERSION = 1;

const R = new TextEncoder().encode(RATIONALE_HEADER); // 10 bytes
const Q = new TextEncoder().encode(QUERIES_HEADER); // 8 bytes
const NL = 0x0a;
const DASH = 0x2d;
const SPACE = 0x20;
const isSp = (b: number) => b === SPACE || b === 0x09 || b === 0x0b || b === 0x0c || b === 0x0d;

/** Phases of the turn (the table above; *Sp: spaces on a blank line, which must end with "\n"). */
const enum P {
  Lead,
  LeadSp,
  RHdr,
  RSp,
  RText,
  RNl,
  RNlSp,
  QHdr,
  QSp,
  QNl,
  QNlSp,
  Dash,
  Bullet,
  QText,
  QEnd,
  Dead,
}

/** A position in the turn: phase, bytes into a header, continuation bytes owed, bytes of the open text field (rationale or query). */
export interface RefinerCursor {
  p: P;
  k: number;
  pending: number;
  chars: number;
}

export const REFINER_START: RefinerCursor = { p: P.Lead, k: 0, pending: 0, chars: 0 };

/** The caps the filter keeps, in bytes of the field (configs/qref.ts qref.turn defaults, in characters: maxRationaleChars, maxQueryChars). */
export const REFINER_FILTER_CAPS = { rationale: 400, query: 200 } as const;

/** The open field's bytes, with the continuation bytes its last character still owes, are past its cap. */
export const overCap = (c: RefinerCursor): boolean =>
  (c.p === P.RText && c.chars + c.pending > REFINER_FILTER_CAPS.rationale) || (c.p === P.QText && c.chars + c.pending > REFINER_FILTER_CAPS.query);

/** Bytes of the shortest completion from `c` (the table above). */
export function shortestCompletion(c: RefinerCursor): number {
  const tail = 1 + Q.length + 1 + 2 + 1; // "\n" "QUERIES:" "\n" "- " mark = 13
  const base = ((): number => {
    switch (c.p) {
      case P.Lead:
        return R.length + 1 + tail;
      case P.LeadSp:
        return 1 + R.length + 1 + tail;
      case P.RHdr:
        return R.length - c.k + 1 + tail;
      case P.RSp:
        return 1 + tail;
      case P.RText:
      case P.RNlSp:
        return tail;
      case P.RNl:
        return tail - 1;
      case P.QHdr:
        return Q.length - c.k + 4;
      case P.QSp:
      case P.QNlSp:
        return 4;
      case P.QNl:
        return 3;
      case P.Dash:
        return 2;
      case P.Bullet:
        return 1;
      case P.QText:
      case P.QEnd:
      case P.Dead:
        return 0;
    }
  })();
  return base + c.pending;
}

/** The cursor after one byte. Bytes the grammar refuses lead to Dead (xgrammar has banned them already). */
export function step(cursor: RefinerCursor, b: number): RefinerCursor {
  let c = cursor;
  if (c.pending > 0) {
    if ((b & 0xc0) === 0x80) return { ...c, pending: c.pending - 1, chars: c.chars + 1 };
    c = { ...c, pending: 0 }; // a broken character: the decoder ends it here (U+FFFD), this byte starts afresh
  }
  const owed = b >= 0xf0 ? 3 : b >= 0xe0 ? 2 : b >= 0xc0 ? 1 : 0; // a character's lead byte: its continuation bytes
  const to = (p: P, k = 0): RefinerCursor => ({ p, k, pending: 0, chars: 0 });
  const text = (p: P): RefinerCursor => ({ p, k: 0, pending: owed, chars: (c.p === p ? c.chars : 0) + 1 }); // one more byte of the field
  switch (c.p) {
    case P.Lead:
    case P.LeadSp:
      return b === R[0] && c.p === P.Lead ? to(P.RHdr, 1) : b === NL ? to(P.Lead) : isSp(b) ? to(P.LeadSp) : to(P.Dead);
    case P.RHdr:
      return b !== R[c.k] ? to(P.Dead) : c.k + 1 === R.length ? to(P.RSp) : to(P.RHdr, c.k + 1);
    case P.RSp:
      return isSp(b) ? c : b === NL ? to(P.Dead) : text(P.RText);
    case P.RText:
      return b === NL ? to(P.RNl) : text(P.RText);
    case P.RNl:
    case P.RNlSp:
      return b === Q[0] && c.p === P.RNl ? to(P.QHdr, 1) : b === NL ? to(P.RNl) : isSp(b) ? to(P.RNlSp) : to(P.Dead);
    case P.QHdr:
      return b !== Q[c.k] ? to(P.Dead) : c.k + 1 === Q.length ? to(P.QSp) : to(P.QHdr, c.k + 1);
    case P.QSp:
      return isSp(b) ? c : b === NL ? to(P.QNl) : to(P.Dead);
    case P.QNl:
    case P.QNlSp:
      return b === DASH && c.p === P.QNl ? to(P.Dash) : b === NL ? to(P.QNl) : isSp(b) ? to(P.QNlSp) : to(P.Dead);
    case P.QEnd:
      return b === DASH ? to(P.Dash) : b === NL || isSp(b) ? c : to(P.Dead); // may end here: the cost stays 0
    case P.Dash:
      return b === SPACE ? to(P.Bullet) : to(P.Dead);
    case P.Bullet:
      return isSp(b) ? c : b === NL ? to(P.Dead) : text(P.QText);
    case P.QText:
      return b === NL ? to(P.QEnd) : text(P.QText);
    case P.Dead:
      return c;
  }
}

export const advance = (c: RefinerCursor, bytes: Uint8Array): RefinerCursor => bytes.reduce(step, c);

/** The cursor after `bytes`, and whether a field passed its cap on the way (a token may pass it and end the line: "club.\n"). */
export function advanceChecked(c: RefinerCursor, bytes: Uint8Array): { cursor: RefinerCursor; over: boolean } {
  let cursor = c;
  let over = false;
  for (const b of bytes) {
    cursor = step(cursor, b);
    over ||= overCap(cursor);
  }
  return { cursor, over };
}

/** Fewest max_tokens the filter can keep a turn inside: the shortest completion from the start and EOS (configs/qref.ts states it for the config check). */
export const REFINER_MIN_TOKENS = shortestCompletion(REFINER_START) + 1;

/** Longest shortest completion after any token from any state (blank spaces before RATIONALE:, 25; a lead byte owes at most 3 more). */
const MAX_AFTER = shortestCompletion({ p: P.LeadSp, k: 0, pending: 0, chars: 0 }) + 3;

export class RefinerTurnFilter {
  private cursor: RefinerCursor = REFINER_START;
  private count = 0;
  private readonly banned: Int32Array; // special indices other than the stop ids
  private readonly longest: number; // bytes of the vocabulary's longest token

  constructor(
    private readonly vocab: TokenVocab,
    private readonly maxTokens: number,
  ) {
    const stops = new Set(vocab.stopIds);
    const ids: number[] = [];
    let longest = 0;
    for (let i = 0; i < vocab.size; i++) {
      if (vocab.special[i] && !stops.has(i)) ids.push(i);
      longest = Math.max(longest, vocab.bytes(i).length);
    }
    this.banned = Int32Array.from(ids);
    this.longest = longest;
  }

  /**
   * No token can break a rule here: room for the longest shortest completion, and for the
   * longest token on top of the open field under the smaller cap (a field the token opens
   * starts with at most that many bytes).
   */
  private roomy(): boolean {
    return this.count + 2 + MAX_AFTER <= this.maxTokens && this.cursor.chars + this.longest <= REFINER_FILTER_CAPS.query;
  }

  /** Clear the bits of the tokens after which the turn could not end in time or a field passes its cap; `mask` is [ceil(vocab.size / 32)]. */
  apply(mask: Int32Array): void {
    for (const i of this.banned) mask[i >>> 5] = (mask[i >>> 5] as number) & ~(1 << (i & 31));
    if (this.roomy()) return;
    const stops = new Set(this.vocab.stopIds);
    for (const i of bitIndices(mask, this.vocab.size)) {
      if (stops.has(i)) continue;
      const next = advanceChecked(this.cursor, this.vocab.bytes(i));
      if (next.over || this.count + 2 + shortestCompletion(next.cursor) > this.maxTokens) mask[i >>> 5] = (mask[i >>> 5] as number) & ~(1 << (i & 31));
    }
  }

  /** The same bans id by id (constraint.ts's per-id path; the bans are already per id). */
  applyPerId(mask: Int32Array): void {
    this.apply(mask);
  }

  accept(i: number): void {
    this.cursor = advance(this.cursor, this.vocab.bytes(i));
    this.count++;
  }
}
