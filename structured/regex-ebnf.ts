// `structured_outputs.regex` -> xgrammar EBNF. The web build of xgrammar has no regex API
// (vLLM's Python xgrammar has Grammar.from_regex), so we translate a documented subset; the
// whole output must match (as in vLLM). Anything outside the subset is an InputError that
// names the construct, its position and what to write instead.
//
// Supported: literals and escaped punctuation; `.` (any character but "\n"); classes
// `[...]` / `[^...]` with ranges and \d \w \s; \d \D \w \W \s \S (ASCII meanings); \n \t \r
// \f \v \0 \xHH \uHHHH; groups `( )`, `(?: )`, `(?P<name> )`, `(?<name> )`; `|`; quantifiers
// * + ? {n} {n,} {n,m} (a lazy `?` after them is accepted: the language is the same);
// `^` at the very start and `$` at the very end. Not supported: backreferences, lookaround,
// \b \B, \p{..}, inline flags, possessive quantifiers, anchors elsewhere, and class ranges or
// negated classes with non-ASCII characters (xgrammar <= 0.1.27 mis-compiles those:
// mlc-ai/xgrammar#848, #909; single non-ASCII characters in a positive class are fine).
import { InputError } from '../util/errors.ts';

const CLASS_ESC: Record<string, string> = { d: '0-9', w: 'a-zA-Z0-9_', s: ' \\t\\n\\r\\f\\v' };
const CHAR_ESC: Record<string, string> = { n: '\n', t: '\t', r: '\r', f: '\f', v: '\v', '0': '\0' };

/** An EBNF string literal. */
export function ebnfString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) as number;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** A character for inside an EBNF class. */
function classChar(ch: string): string {
  const c = ch.codePointAt(0) as number;
  if (']\\^-'.includes(ch)) return `\\${ch}`;
  if (c < 0x20 || c === 0x7f) return `\\x${c.toString(16).padStart(2, '0')}`;
  return ch;
}

class Parser {
  private i = 0;
  constructor(private readonly src: string) {}

  fail(what: string, fix: string): never {
    throw new InputError(
      `structured_outputs.regex: ${what} at offset ${this.i} of ${JSON.stringify(this.src.slice(0, 80))} is not supported by gsteer serve's regex subset; ${fix}`,
    );
  }

  parse(): string {
    if (this.src.startsWith('^')) this.i++;
    const body = this.alternation(true);
    if (this.i < this.src.length) this.fail(`unmatched ")"`, 'balance the parentheses');
    return body;
  }

  private peek(): string | undefined {
    return this.src[this.i];
  }

  private alternation(top: boolean): string {
    const alts = [this.sequence(top)];
    while (this.peek() === '|') {
      this.i++;
      alts.push(this.sequence(top));
    }
    return alts.length === 1 ? (alts[0] as string) : `(${alts.join(' | ')})`;
  }

  private sequence(top: boolean): string {
    const parts: string[] = [];
    for (let ch = this.peek(); ch !== undefined && ch !== '|' && ch !== ')'; ch = this.peek()) {
      if (ch === '$') {
        this.i++;
        if (!(top && (this.i === this.src.length || this.peek() === '|'))) this.fail('"$" before the end', 'drop it: the whole output must match anyway');
        continue;
      }
      if (ch === '^') this.fail('"^" after the start', 'drop it: the whole output must match anyway');
      parts.push(this.quantified(this.atom()));
    }
    return parts.length ? parts.join(' ') : '""';
  }

  private quantified(atom: string): string {
    let out = atom;
    for (;;) {
      const ch = this.peek();
      let q: string | null = null;
      if (ch === '*' || ch === '+' || ch === '?') q = ch;
      else if (ch === '{') {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
        if (!m) return out; // a literal "{", as in Python
        if (m[3] && Number(m[3]) < Number(m[1])) this.fail(`repetition ${m[0]} with max < min`, 'write {min,max} with min <= max');
        q = m[0];
      }
      if (!q) return out;
      this.i += q.length;
      if (this.peek() === '+') this.fail('a possessive quantifier', 'drop the "+" after the quantifier');
      if (this.peek() === '?') this.i++; // lazy: same language
      // x{0} and x{0,0} match only the empty string, and so does any repetition of it. Written
      // as "" because xgrammar 0.1.27 (wasm) intermittently reads out of bounds compiling a
      // zero-count repetition again in the same compiler (found by tests/structured/compile.test.ts).
      out = out === '""' || /^\{0(,0)?\}$/.test(q) ? '""' : `(${out})${q}`;
    }
  }

  private atom(): string {
    const ch = this.peek() as string;
    this.i++;
    if (ch === '(') return this.group();
    if (ch === '[') return this.charClass();
    if (ch === '.') return '[^\\n]';
    if (ch === '\\') return this.escape();
    if (ch === '*' || ch === '+' || ch === '?') this.fail(`"${ch}" with nothing to repeat`, `escape it as \\${ch}`);
    const cp = this.src.codePointAt(this.i - 1) as number;
    if (cp > 0xffff) this.i++;
    return ebnfString(String.fromCodePoint(cp));
  }

  private group(): string {
    if (this.peek() === '?') {
      const m = /^\?(:|P?<[A-Za-z_]\w*>)/.exec(this.src.slice(this.i));
      if (!m) this.fail('a lookaround or inline flag "(?..."', 'use a plain group "( )" or "(?: )"');
      this.i += m[0].length;
    }
    const inner = this.alternation(false);
    if (this.peek() !== ')') this.fail('an unclosed "("', 'add the ")"');
    this.i++;
    return `(${inner})`;
  }

  private hex(len: number): string {
    const h = this.src.slice(this.i, this.i + len);
    if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(h)) this.fail(`a malformed escape`, `write exactly ${len} hex digits`);
    this.i += len;
    return String.fromCodePoint(parseInt(h, 16));
  }

  /** One escaped character, or null for a class shorthand (then `shorthand` holds it). */
  private escapedChar(inClass: boolean): { char: string } | { shorthand: string; negated: boolean } {
    const e = this.peek();
    if (e === undefined) this.fail('a trailing "\\"', 'escape the backslash as \\\\');
    this.i++;
    if (e in CLASS_ESC) return { shorthand: e, negated: false };
    if (e.toLowerCase() in CLASS_ESC && e !== e.toLowerCase()) return { shorthand: e.toLowerCase(), negated: true };
    if (e in CHAR_ESC) return { char: CHAR_ESC[e] as string };
    if (e === 'x') return { char: this.hex(2) };
    if (e === 'u') return { char: this.hex(4) };
    if (/[bB]/.test(e) && !inClass) this.fail(`the word boundary \\${e}`, 'spell the characters out');
    if (/[1-9]/.test(e)) this.fail(`the backreference \\${e}`, 'repeat the group itself');
    if (/[A-Za-z0-9]/.test(e)) this.fail(`the escape \\${e}`, 'use a character class');
    return { char: e };
  }

  private escape(): string {
    const r = this.escapedChar(false);
    if ('char' in r) return ebnfString(r.char);
    return `[${r.negated ? '^' : ''}${CLASS_ESC[r.shorthand]}]`;
  }

  /** One class member: a character, or the ASCII ranges of a \\d \\w \\s shorthand. */
  private classMember(): { char: string } | { ranges: string } {
    if (this.peek() !== '\\') {
      const cp = this.src.codePointAt(this.i) as number;
      this.i += cp > 0xffff ? 2 : 1;
      return { char: String.fromCodePoint(cp) };
    }
    this.i++;
    const r = this.escapedChar(true);
    if ('char' in r) return r;
    if (r.negated) this.fail(`\\${r.shorthand.toUpperCase()} inside a class`, 'list the characters the class allows');
    return { ranges: CLASS_ESC[r.shorthand] as string };
  }

  /** The upper end of a range "lo-hi" when one follows. */
  private rangeEnd(): string | null {
    if (this.peek() !== '-' || this.src[this.i + 1] === ']' || this.src[this.i + 1] === undefined) return null;
    this.i++;
    const hi = this.classMember();
    if (!('char' in hi)) this.fail('a class shorthand as a range end', 'write the range with characters');
    return hi.char;
  }

  private charClass(): string {
    const negated = this.peek() === '^';
    if (negated) this.i++;
    const ascii: string[] = [];
    const wide: string[] = [];
    let first = true;
    while (this.peek() !== ']' || first) {
      if (this.peek() === undefined) this.fail('an unclosed "["', 'add the "]"');
      first = false;
      const m = this.classMember();
      if ('ranges' in m) {
        ascii.push(m.ranges);
        continue;
      }
      const lo = m.char;
      const hi = this.rangeEnd() ?? lo;
      if ((hi.codePointAt(0) as number) < (lo.codePointAt(0) as number)) this.fail(`the range ${lo}-${hi} (end before start)`, 'swap the ends');
      const isAscii = (lo.codePointAt(0) as number) < 0x80 && (hi.codePointAt(0) as number) < 0x80;
      if (isAscii) ascii.push(lo === hi ? classChar(lo) : `${classChar(lo)}-${classChar(hi)}`);
      else if (lo !== hi || negated)
        this.fail(
          `a ${negated ? 'negated class with' : 'class range over'} non-ASCII characters`,
          'list the non-ASCII characters one by one in a positive class, or as alternatives (a|b)',
        );
      else wide.push(ebnfString(lo));
    }
    this.i++;
    const cls = ascii.length ? `[${negated ? '^' : ''}${ascii.join('')}]` : '';
    const alts = [...(cls ? [cls] : []), ...wide];
    if (!alts.length) this.fail('an empty class "[]"', 'put at least one character in it');
    return alts.length === 1 ? (alts[0] as string) : `(${alts.join(' | ')})`;
  }
}

/** `root ::= ...` for a regex in the supported subset (full match). */
export function regexToEbnf(regex: string): string {
  return `root ::= ${new Parser(regex).parse()}\n`;
}

/** vLLM's choice -> grammar rewrite: one literal alternative per choice. */
export function choiceEbnf(choice: readonly string[]): string {
  return `root ::= ${choice.map(ebnfString).join(' | ')}\n`;
}
