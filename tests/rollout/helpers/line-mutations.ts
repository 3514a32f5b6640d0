// Line-level damage to a rendered turn, the kinds a small model does (drop or repeat a line,
// swap two, blank lines, trailing padding, a junk line, a cut, a stray character, CRLF), for
// property tests of a turn grammar against its parser. A test adds its own kinds through
// `extra` (it gets the lines, the index and the random pick, and returns the new lines).
import fc from 'fast-check';

export const LINE_MUTATIONS = ['drop', 'dup', 'swap', 'blank', 'pad', 'junk', 'cut', 'char', 'crlf'] as const;

/** Cut a line at a code point (model output is decoded UTF-8: it never holds half a surrogate pair). */
export const cutAt = (l: string, r: number) => [...l].slice(0, r % ([...l].length + 1)).join('').length;

export type ExtraMutation = (lines: string[], i: number, r: number) => string[];

export function mutationKinds(extra: Record<string, ExtraMutation> = {}): fc.Arbitrary<string> {
  return fc.constantFrom(...LINE_MUTATIONS, ...Object.keys(extra));
}

export function mutateLines(
  base: string,
  kinds: readonly string[],
  picks: readonly number[],
  junk: readonly string[],
  extra: Record<string, ExtraMutation> = {},
): string {
  let lines = base.split('\n');
  kinds.forEach((kind, k) => {
    const r = picks[k] ?? 0;
    if (!lines.length) lines = [''];
    const i = r % lines.length;
    const l = lines[i] as string;
    switch (kind) {
      case 'drop':
        lines.splice(i, 1);
        break;
      case 'dup':
        lines.splice(i, 0, l);
        break;
      case 'swap': {
        const j = (r >> 3) % lines.length;
        [lines[i], lines[j]] = [lines[j] as string, l];
        break;
      }
      case 'blank':
        lines.splice(i, 0, [' ', '', '\t\r'][r % 3] as string);
        break;
      case 'pad':
        lines[i] = l + [' ', '\t', '\r', ' \u00a0', '\f'][r % 5];
        break;
      case 'junk':
        lines.splice(i, 0, junk[r % junk.length] as string);
        break;
      case 'cut': {
        const p = cutAt(l, r >> 2);
        lines = lines.slice(0, i + 1);
        lines[i] = l.slice(0, p);
        break;
      }
      case 'char': {
        const p = cutAt(l, r >> 2);
        lines[i] = l.slice(0, p) + String.fromCharCode(32 + (r % 95)) + l.slice(p);
        break;
      }
      case 'crlf':
        lines = lines.map((x) => `${x}\r`);
        break;
      default: {
        const f = extra[kind];
        if (!f) throw new Error(`unknown mutation ${kind}`);
        lines = f(lines, i, r);
      }
    }
  });
  return lines.join('\n');
}
