// A reference for "which tokens keep a partial policy turn inside the grammar", written apart
// from xgrammar and from the serve filter: a prefix is viable when some completion makes
// parseTurn (structured/turn/grammar.ts) accept it, slot names aside (the EBNF alone cannot forbid a
// repeated name). Completions are tried from a small candidate set that covers every place
// a line can be cut (each suffix of a shortest line of every kind), so parseTurn stays the
// judge of what is valid (tests/structured/turn-prefix.test.ts checks the reference).
import { ACTIONS, parseTurn, SECTIONS, SOURCES, STATUSES, trimField } from '../../structured/turn/grammar.ts';

const HEADS = SECTIONS.map((s) => `${s}:`);
/** Shortest lines of the sections after section i (-1 = before STATE), joined with "\n". */
const MIN_LINE = ['STATE:', 'PLAN:x', 'ACTION:ASK', 'EXECUTE:x'];
const tailAfter = (section: number) =>
  MIN_LINE.slice(section + 1)
    .map((l) => `\n${l}`)
    .join('');
const SLOT_LINES = STATUSES.flatMap((st) =>
  SOURCES.map((src) => `- x | purpose: x | status: ${st} | source: ${src} | value:${st === 'uncovered' ? '' : ' x'}`),
);
// An action may follow a run of spaces; the run's last character is where a cut can fall.
const ACTION_LINES = ACTIONS.flatMap((a) => ['', ' ', '\t', '\v', '\f', '\r'].map((sp) => `ACTION:${sp}${a}`));
const LINES = [...SLOT_LINES, 'STATE:', 'PLAN:x', ...ACTION_LINES, 'EXECUTE:x'];

/** Give every slot line a distinct name, so only the other rules decide (names that are blank stay blank). */
function uniqueNames(text: string): string {
  let n = 0;
  return text
    .split('\n')
    .map((line) => {
      const pipe = line.indexOf(' | purpose: ');
      if (!line.startsWith('- ') || pipe < 0 || !trimField(line.slice(2, pipe))) return line;
      return `${line.slice(0, pipe)}\u0001${n++}${line.slice(pipe)}`;
    })
    .join('\n');
}

/** parseTurn's verdict, ignoring repeated slot names. */
export const validIgnoringNames = (text: string) => parseTurn(uniqueNames(text)).ok;

/**
 * Bytes as the grammar sees them: ASCII as is; a multi-byte UTF-8 character, complete or
 * cut short, as "é" (the grammar treats every non-ASCII character alike). Null for a byte
 * sequence no completion can make valid (xgrammar 0.1.27's rule: a lead byte 0xC0-0xF7
 * announces 1-3 continuation bytes 0x80-0xBF).
 */
export function grammarText(bytes: Uint8Array): string | null {
  let out = '';
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i] as number;
    if (b < 0x80) {
      out += String.fromCharCode(b);
      i++;
      continue;
    }
    if (b < 0xc0 || b > 0xf7) return null;
    const n = b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
    for (let k = 1; k <= n && i + k < bytes.length; k++) if (((bytes[i + k] as number) & 0xc0) !== 0x80) return null;
    out += 'é';
    i += n + 1;
  }
  return out;
}

/** Is there a completion of `text` that parseTurn accepts (slot names aside)? */
export function viablePrefix(text: string): boolean {
  const cut = text.lastIndexOf('\n');
  const head = cut < 0 ? '' : text.slice(0, cut + 1);
  const last = text.slice(cut + 1);
  const sectionOf = (s: string) => {
    let at = -1;
    for (const line of s.split('\n')) HEADS.forEach((h, i) => line.startsWith(h) && (at = Math.max(at, i)));
    return at;
  };
  const before = sectionOf(head);
  // Where `last` can stand in a line: right after a literal character it ends with (cut
  // inside a header, a separator or an enum), or inside a field, which an "x" may fill and
  // end before the next " | " (or the end of the line).
  const endings = new Set<string>(['', 'x']);
  const lastChar = last[last.length - 1];
  for (const full of LINES)
    for (let k = 0; k <= full.length; k++) {
      const rest = full.slice(k);
      if (k === 0 ? last === '' : full[k - 1] === lastChar) endings.add(rest);
      if (rest === '' || rest.startsWith(' | ')) endings.add(`x${rest}`);
    }
  for (const end of endings) {
    const line = last + end;
    const section = Math.max(before, sectionOf(line));
    if (validIgnoringNames(head + line + tailAfter(section))) return true;
  }
  return false;
}
