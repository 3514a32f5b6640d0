// Where a partial policy turn stands, byte by byte: which line, which field, how long each
// capped field is, the slot names seen, and the shortest text that still completes the turn.
// The policy filter (policy-filter.ts) runs one cursor per sequence; it only ever sees
// bytes the EBNF (structured/turn/grammar-ebnf.ts) allows, so the cursor tracks positions and does
// not re-check the grammar.
//
// Line kinds follow structured/turn/grammar.ts: blank lines, the four headers, slot lines
//   "- " NAME "|" " purpose: " PURPOSE "|" " status: " STATUS "|" " source: " SOURCE "|" " value:" VALUE
// where NAME and PURPOSE include the space before their "|", STATUS/SOURCE are the enum plus
// that space, and VALUE is everything after "value:" (its leading space included).
// Multi-byte characters only occur inside fields (everything else is ASCII): a lead byte
// 0xC0-0xF7 announces 1-3 continuation bytes, the rule xgrammar 0.1.27 applies.
import { ACTIONS, FIELD_SPACE, SECTIONS, SOURCES, STATUSES, trimField } from './grammar.ts';

export type CapName = 'name' | 'purpose' | 'value' | 'plan' | 'execute';

/** Byte caps per field, slot lines per STATE, and whitespace outside fields (blank lines, padding). */
export interface TurnCaps {
  name: number;
  purpose: number;
  value: number;
  plan: number;
  execute: number;
  slots: number;
  slack: number;
}

// Slot line segments in order; odd ones are fixed literals.
const SEG_LIT = ['- ', '', ' purpose: ', '', ' status: ', '', ' source: ', '', ' value:', ''] as const;
const DASH = 0,
  NAME = 1,
  PURPOSE = 3,
  STATUS = 5,
  SOURCE = 7,
  VALUE = 9;
const SPACE = new Set([...FIELD_SPACE].map((c) => c.charCodeAt(0)));
const NL = 0x0a,
  PIPE = 0x7c,
  SP = 0x20;
const HEAD = SECTIONS.map((s) => `${s}:`);
const SHORTEST_ACTION = [...ACTIONS].sort((a, b) => a.length - b.length)[0] as string;
/** Shortest lines of the sections after section s, from a line start: "PLAN:x\nACTION:ASK\nEXECUTE:x" for s = 0. */
const MIN_LINE = ['STATE:', 'PLAN:x', `ACTION:${SHORTEST_ACTION}`, 'EXECUTE:x'];
const fromLineStart = (section: number) => MIN_LINE.slice(section + 1).join('\n');
/** A status with its value's shortest form: uncovered -> "", partial/covered -> " x". */
const valueFor = (status: string) => (status.startsWith('uncovered') ? '' : ' x');
const decoder = new TextDecoder();

type Line = 'start' | 'blank' | 'head' | 'stateTail' | 'text' | 'action' | 'slot';

interface Field {
  cap: CapName;
  bytes: number;
  nonSpace: boolean;
  lastSpace: boolean;
}

export class TurnCursor {
  section = -1; // index in SECTIONS of the last header begun
  line: Line = 'start';
  col = 0; // bytes of the current line (headers: of their literal)
  seg = DASH; // slot segment
  segText = ''; // literal progress / enum text / name bytes (latin1)
  field: Field | null = null;
  status = ''; // this slot's status text (for its value)
  pending = 0; // continuation bytes the last character still needs
  slack = 0;
  slots = 0;
  names: ReadonlySet<string> = new Set();

  constructor(readonly caps: TurnCaps) {}

  clone(): TurnCursor {
    const c = new TurnCursor(this.caps);
    c.section = this.section;
    c.line = this.line;
    c.col = this.col;
    c.seg = this.seg;
    c.segText = this.segText;
    const f = this.field;
    c.field = f && { cap: f.cap, bytes: f.bytes, nonSpace: f.nonSpace, lastSpace: f.lastSpace };
    c.status = this.status;
    c.pending = this.pending;
    c.slack = this.slack;
    c.slots = this.slots;
    c.names = this.names; // replaced, never mutated
    return c;
  }

  /** Advance by one byte; returns why the byte breaks a cap or the slot-name rule, else null. */
  push(b: number): string | null {
    if (this.pending > 0) {
      this.pending--;
      return this.fieldByte(b);
    }
    switch (this.line) {
      case 'start':
        return this.lineStart(b);
      case 'blank': // whitespace so far (already counted); its "\n" is free, so a full slack can still end it
      case 'stateTail': // "STATE:" + padding; the "\n" is the line's own
        if (b === NL) {
          this.endLine();
          return null;
        }
        return this.addSlack(1);
      case 'head':
        if (++this.col < (HEAD[this.section] as string).length) return null;
        return this.headerDone();
      case 'action':
        if (b === NL) this.endLine();
        else if (SPACE.has(b)) return this.addSlack(1);
        else this.segText += String.fromCharCode(b);
        return null;
      case 'text':
        if (b === NL) {
          this.endLine();
          return null;
        }
        return this.fieldByte(b);
      case 'slot':
        return this.slotByte(b);
      default: {
        const never: never = this.line;
        throw new Error(`internal: line ${String(never)}`);
      }
    }
  }

  private lineStart(b: number): string | null {
    this.col = 1;
    if (b === NL) {
      this.col = 0;
      return this.addSlack(1); // an empty line
    }
    if (SPACE.has(b)) {
      this.line = 'blank';
      return this.addSlack(1);
    }
    if (b === 0x2d) {
      // "-": a slot line
      if (this.slots >= this.caps.slots) return `more than ${this.caps.slots} slot lines`;
      this.slots++;
      this.line = 'slot';
      this.seg = DASH;
      this.segText = '-';
      this.status = '';
      return null;
    }
    this.section = HEAD.findIndex((h) => h.charCodeAt(0) === b);
    if (this.section < 0) throw new Error(`internal: byte ${b} cannot start a line of a policy turn`);
    this.line = 'head';
    return null;
  }

  private headerDone(): null {
    switch (this.section) {
      case 0:
        this.line = 'stateTail';
        break;
      case 2:
        this.line = 'action';
        this.segText = '';
        break;
      default:
        this.line = 'text';
        this.field = { cap: this.section === 1 ? 'plan' : 'execute', bytes: 0, nonSpace: false, lastSpace: false };
    }
    return null;
  }

  private endLine(): void {
    this.line = 'start';
    this.col = 0;
    this.field = null;
    this.seg = DASH;
  }

  private addSlack(n: number): string | null {
    this.slack += n;
    return this.slack > this.caps.slack ? `more than ${this.caps.slack} bytes of whitespace outside fields` : null;
  }

  private fieldByte(b: number): string | null {
    const f = this.field as Field;
    f.bytes++;
    if (this.seg === NAME && this.line === 'slot') this.segText += String.fromCharCode(b);
    if (b >= 0xc0 && this.pending === 0) this.pending = b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
    f.nonSpace ||= !SPACE.has(b);
    f.lastSpace = b === SP;
    return f.bytes + this.pending > this.caps[f.cap] ? `${f.cap} longer than ${this.caps[f.cap]} bytes` : null;
  }

  private slotByte(b: number): string | null {
    const lit = SEG_LIT[this.seg] as string;
    if (lit) {
      this.segText += String.fromCharCode(b);
      if (this.segText.length === lit.length) this.nextSeg();
      return null;
    }
    if (this.seg === VALUE) {
      if (b === NL) {
        this.endLine();
        return null;
      }
      return this.fieldByte(b);
    }
    if (b !== PIPE) {
      if (this.seg === STATUS || this.seg === SOURCE) {
        this.segText += String.fromCharCode(b);
        return null;
      }
      return this.fieldByte(b);
    }
    // "|" closes NAME, PURPOSE, STATUS or SOURCE
    if (this.seg === NAME) {
      const name = this.currentName();
      if (this.names.has(name)) return `slot name ${JSON.stringify(name)} appears twice in STATE`;
      this.names = new Set([...this.names, name]);
    }
    if (this.seg === STATUS) this.status = this.segText;
    this.nextSeg();
    return null;
  }

  private nextSeg(): void {
    this.seg++;
    this.segText = '';
    this.field = null;
    if (this.seg === NAME || this.seg === PURPOSE || this.seg === VALUE)
      this.field = { cap: this.seg === NAME ? 'name' : this.seg === PURPOSE ? 'purpose' : 'value', bytes: 0, nonSpace: false, lastSpace: false };
  }

  /** The slot name being written, as parseTurn will read it (UTF-8, grammar-trimmed). */
  private currentName(): string {
    return trimField(decoder.decode(Buffer.from(this.segText, 'latin1')));
  }

  /** Bytes the open field still needs to be closable (a non-space character, the space before "|"). */
  need(): number {
    const f = this.field;
    if (!f) return 0;
    if (this.line === 'text') return f.nonSpace ? 0 : 1;
    if (this.seg === VALUE) return valueFor(this.status).length === 0 ? 0 : f.bytes === 0 ? 2 : f.nonSpace ? 0 : 1;
    if (!f.nonSpace) return 2;
    if (this.seg === NAME && this.names.has(this.currentName())) return 2;
    return f.lastSpace ? 0 : 1;
  }

  /**
   * Bytes a token may add here and stay clear of every cap, if it holds no "\n" or "|": the
   * rest of a literal that leads into a field (after "-", "| purpose:", "| value:", "PLAN",
   * "EXECUTE") plus the field's free bytes. null where no field is open or next.
   */
  fieldRoom(): number | null {
    if (this.pending > 0) return null;
    if (this.field) return this.caps[this.field.cap] - this.field.bytes;
    if (this.line === 'head' && (this.section === 1 || this.section === 3))
      return (HEAD[this.section] as string).length - this.col + this.caps[this.section === 1 ? 'plan' : 'execute'];
    if (this.line !== 'slot') return null;
    const lit = SEG_LIT[this.seg] as string;
    const next = this.seg === DASH ? 'name' : this.seg === PURPOSE - 1 ? 'purpose' : this.seg === VALUE - 1 ? 'value' : null;
    return next ? lit.length - this.segText.length + this.caps[next] : null;
  }

  /**
   * For a token without "\n"/"|" that ends in the open (or next) field: `litRest` = bytes of
   * literal before that field, `tail` = bytes of the completion after the field closes (so
   * such a token leaves a completion of tail + its field's pending + need). null where
   * fieldRoom() is null.
   */
  fieldTail(): { litRest: number; tail: number } | null {
    if (this.fieldRoom() === null) return null;
    const c = this.clone();
    let litRest = 0;
    if (!c.field) {
      const lit = c.line === 'head' ? (HEAD[c.section] as string).slice(c.col) : (SEG_LIT[c.seg] as string).slice(c.segText.length);
      for (let i = 0; i < lit.length; i++) c.push(lit.charCodeAt(i));
      litRest = lit.length;
    }
    return { litRest, tail: c.completion().length - c.need() };
  }

  /** Bytes of the open field, of what it must still take, and its cap (null outside fields). */
  openField(): { bytes: number; reserve: number; cap: number } | null {
    const f = this.field;
    // While a character is unfinished its completion may change the name, so reserve the most.
    return f ? { bytes: f.bytes, reserve: this.pending + (this.pending ? 2 : this.need()), cap: this.caps[f.cap] } : null;
  }

  /**
   * The shortest continuation that ends the turn (bytes as a latin1 string). Appending it
   * byte by byte never breaks a cap or the slot-name rule, and each byte shortens it by one:
   * the filter's budget rule relies on both (tests/structured/turn/cursor.test.ts).
   */
  completion(): string {
    if (this.pending === 0) return this.lineCompletion() + this.afterLine();
    // Finish the character first (any continuation byte does for xgrammar 0.1.27).
    const done = this.clone();
    const cont = '\x80'.repeat(this.pending);
    for (let i = 0; i < this.pending; i++) done.push(0x80);
    return cont + done.completion();
  }

  private afterLine(): string {
    if (this.line === 'start') return fromLineStart(this.section);
    const closing = this.line === 'slot' ? 0 : this.section;
    const rest = fromLineStart(closing);
    return rest ? `\n${rest}` : '';
  }

  private lineCompletion(): string {
    switch (this.line) {
      case 'start':
      case 'blank':
      case 'stateTail':
        return '';
      case 'head': {
        const head = (HEAD[this.section] as string).slice(this.col);
        return this.section === 0 ? head : `${head}${(MIN_LINE[this.section] as string).slice(HEAD[this.section]?.length)}`;
      }
      case 'text':
        return this.need() ? 'x' : '';
      case 'action': {
        const word = ACTIONS.filter((a) => a.startsWith(this.segText)).sort((a, b) => a.length - b.length)[0] as string;
        return word.slice(this.segText.length);
      }
      case 'slot':
        return this.slotCompletion();
      default: {
        const never: never = this.line;
        throw new Error(`internal: line ${String(never)}`);
      }
    }
  }

  private slotCompletion(): string {
    let out = '';
    let status = this.status;
    for (let seg = this.seg; seg <= VALUE; seg++) {
      const here = seg === this.seg;
      const lit = SEG_LIT[seg] as string;
      if (lit) out += here ? lit.slice(this.segText.length) : lit;
      else if (seg === NAME) out += `${here ? this.nameTail() : this.freshName()}|`;
      else if (seg === PURPOSE) out += `${here ? ' x '.slice(3 - this.need()) : 'x '}|`;
      else if (seg === STATUS) {
        const pick = this.shortestEnum(STATUSES, here ? this.segText : '', (s) => valueFor(s).length);
        status = pick;
        out += `${`${pick} `.slice(here ? this.segText.length : 0)}|`;
      } else if (seg === SOURCE) out += `${`${this.shortestEnum(SOURCES, here ? this.segText : '', () => 0)} `.slice(here ? this.segText.length : 0)}|`;
      else out += here ? ' x'.slice(2 - this.need()) : valueFor(status);
    }
    return out;
  }

  /** The enum value (with its trailing space already typed, if any) that completes `typed` in the fewest bytes. */
  private shortestEnum(values: readonly string[], typed: string, extra: (v: string) => number): string {
    const fits = values.filter((v) => `${v} `.startsWith(typed));
    const cost = (v: string) => v.length + 1 - typed.length + extra(v);
    const best = fits.sort((a, b) => cost(a) - cost(b))[0];
    if (best === undefined) throw new Error(`internal: ${JSON.stringify(typed)} starts none of ${values.join(', ')}`);
    return best;
  }

  private nameTail(): string {
    const need = this.need();
    if (need === 0) return '';
    if (need === 1) return ' ';
    return `${this.uniqueChar(this.segText)} `;
  }

  private freshName(): string {
    return `${this.uniqueChar('')} `;
  }

  /** A letter that, appended to the name bytes typed so far, gives a name not used yet. */
  private uniqueChar(typed: string): string {
    const named = (c: string) => trimField(decoder.decode(Buffer.from(typed + c, 'latin1')));
    for (const c of 'xyzwvutsrqponmlkjihgfedcba') if (!this.names.has(named(c))) return c;
    throw new Error('internal: 26 one-letter extensions of a slot name are all taken');
  }
}
