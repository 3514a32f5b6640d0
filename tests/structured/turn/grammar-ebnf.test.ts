// The policy grammar as EBNF (structured/turn/grammar-ebnf.ts) against parseTurn (structured/turn/grammar.ts),
// with xgrammar deciding acceptance:
//   every renderTurn output is accepted; on fuzzed text, accepted => parseTurn ok or
//   duplicate_slot, and parseTurn ok => accepted; with the policy filter's byte rules on
//   (TurnCursor, structured/turn/cursor.ts), accepted => parseTurn ok.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { POLICY_GRAMMAR } from '../../../structured/turn/grammar-ebnf.ts';
import { ACTIONS, parseTurn, renderTurn, SOURCES, STATUSES } from '../../../structured/turn/grammar.ts';
import type { EvidenceSlot, PolicyTurn } from '../../../core/types.ts';
import { POLICY_CAPS } from '../../../structured/turn/caps.ts';
import { TurnCursor } from '../../../structured/turn/cursor.ts';
import { ebnfAcceptor } from '../accept.ts';

let accepts: (text: string) => boolean;
beforeAll(async () => {
  accepts = await ebnfAcceptor(POLICY_GRAMMAR);
});

// Field text with what makes the grammar hard: pipes, ASCII and non-ASCII whitespace,
// line separators, colons, header words, non-ASCII letters, emoji.
const tricky = fc.constantFrom(
  '|',
  ' ',
  '\t',
  '\r',
  '\v',
  '\f',
  '\n',
  '\u00a0',
  '\u2028',
  '\u3000',
  ':',
  'STATE:',
  'PLAN:',
  '- ',
  'é',
  '中',
  '😀',
  'value:',
  'status: covered',
);
const text = fc.array(fc.oneof(fc.string({ maxLength: 6 }), tricky), { maxLength: 6 }).map((p) => p.join(''));
/** Non-empty once renderTurn flattens ASCII whitespace (non-ASCII whitespace is text to the grammar). */
const nonEmpty = text.filter((s) => /[^ \t\n\v\f\r]/.test(s));
const slot: fc.Arbitrary<EvidenceSlot> = fc
  .record({ name: nonEmpty, purpose: nonEmpty, status: fc.constantFrom(...STATUSES), source: fc.constantFrom(...SOURCES), value: nonEmpty })
  .map((s) => ({ ...s, value: s.status === 'uncovered' ? '' : s.value }));
const turn: fc.Arbitrary<PolicyTurn> = fc.record({
  state: fc.array(slot, { maxLength: 5 }),
  plan: nonEmpty,
  action: fc.constantFrom(...ACTIONS),
  execute: nonEmpty,
});

/** Byte-level mutations of a rendered turn: the kinds of damage a small model does. */
const mutation = fc.constantFrom('drop', 'dup', 'swap', 'blank', 'pad', 'enum', 'pipe', 'junk', 'cut', 'char', 'crlf', 'dupSlot');
const JUNK = ['', '  ', 'STATE:', 'PLAN: again', 'ACTION: STOP', 'EXECUTE:', '-', '- x |', 'hello', '|||', 'value:', ' PLAN: x', '\u00a0', 'ACTION:ASK'];
const BAD_ENUM: [RegExp, string][] = [
  [/status: \w+/, 'status: done'],
  [/source: \w+/, 'source: web'],
  [/ACTION: \w+/, 'ACTION: ask'],
  [/covered/, 'Covered'],
];

/** Cut a line at a code point (model output is decoded UTF-8: it never holds half a surrogate pair). */
const cutAt = (l: string, r: number) => [...l].slice(0, r % ([...l].length + 1)).join('').length;

function mutate(base: string, kinds: string[], picks: number[]): string {
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
      case 'enum': {
        const [re, to] = BAD_ENUM[r % BAD_ENUM.length]!;
        lines[i] = l.replace(re, to);
        break;
      }
      case 'pipe': {
        const p = cutAt(l, r >> 2);
        lines[i] = `${l.slice(0, p)}|${l.slice(p)}`;
        break;
      }
      case 'junk':
        lines.splice(i, 0, JUNK[r % JUNK.length] as string);
        break;
      case 'cut':
        lines = lines.slice(0, i + 1);
        lines[i] = l.slice(0, cutAt(l, r >> 2));
        break;
      case 'char': {
        const p = cutAt(l, r >> 2);
        lines[i] = l.slice(0, p) + String.fromCharCode(32 + (r % 95)) + l.slice(p);
        break;
      }
      case 'crlf':
        lines = lines.map((x) => `${x}\r`);
        break;
      case 'dupSlot': {
        const s = lines.findIndex((x) => x.startsWith('- '));
        if (s >= 0) lines.splice(s, 0, lines[s] as string);
        break;
      }
    }
  });
  return lines.join('\n');
}

/** The text as each byte passes the policy filter's byte rules (caps, slot names, slack): null when none breaks. */
function filterBreak(text: string): string | null {
  const c = new TurnCursor(POLICY_CAPS);
  for (const b of Buffer.from(text, 'utf8')) {
    const why = c.push(b);
    if (why) return why;
  }
  return null;
}

describe('structured/turn/grammar.ebnf', () => {
  it('is the text policyGrammarEbnf() writes (regenerate: node --import tsx -e "import(\'./structured/turn/grammar-ebnf.ts\').then(m => process.stdout.write(m.POLICY_GRAMMAR))" > structured/turn/grammar.ebnf)', () => {
    expect(readFileSync(new URL('../../../structured/turn/grammar.ebnf', import.meta.url), 'utf8')).toBe(POLICY_GRAMMAR);
  });

  it('accepts the documented example and rejects what parseTurn rejects in it', () => {
    const good =
      'STATE:\n- budget | purpose: spending limit | status: covered | source: dialogue | value: under 1200 EUR\n- use | purpose: main workloads | status: uncovered | source: dialogue | value:\nPLAN: ask\nACTION: ASK\nEXECUTE: What for?';
    expect(accepts(good)).toBe(true);
    expect(accepts(`${good}\n\n \t\n`)).toBe(true);
    expect(accepts(good.replace('ACTION: ASK', 'ACTION: ask'))).toBe(false);
    expect(accepts(good.replace('| value: under 1200 EUR', '| value:'))).toBe(false);
    expect(accepts(good.replace('- use |', '-  |'))).toBe(false);
    expect(accepts(`${good}\nthanks`)).toBe(false);
  });

  it('accepts every renderTurn output', () => {
    fc.assert(
      fc.property(turn, (t) => {
        const x = renderTurn(t);
        const r = parseTurn(x);
        expect(r.ok || r.reason === 'duplicate_slot').toBe(true);
        expect(accepts(x)).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('on fuzzed turns: accepted => parseTurn ok or duplicate_slot; parseTurn ok => accepted', () => {
    let accepted = 0;
    let dups = 0;
    fc.assert(
      fc.property(turn, fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.array(fc.nat(), { minLength: 3, maxLength: 3 }), (t, kinds, picks) => {
        const x = mutate(renderTurn(t), kinds, picks);
        const r = parseTurn(x);
        const a = accepts(x);
        if (a) {
          accepted++;
          if (!r.ok) dups++;
          expect(r.ok ? 'ok' : r.reason).toMatch(/^(ok|duplicate_slot)$/);
        }
        if (r.ok) expect(a).toBe(true);
      }),
      { numRuns: 3000 },
    );
    // Both sides of the property were exercised, duplicate names included.
    expect(accepted).toBeGreaterThan(300);
    expect(accepted).toBeLessThan(3000);
    expect(dups).toBeGreaterThan(10);
  });

  it('on random strings: the same two implications', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        const x = `STATE:\n${s}`;
        const r = parseTurn(x);
        if (accepts(x)) expect(r.ok || r.reason === 'duplicate_slot').toBe(true);
        if (r.ok) expect(accepts(x)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('with the filter on: accepted => parseTurn ok; a valid turn within the caps passes the filter', () => {
    let blocked = 0;
    fc.assert(
      fc.property(turn, fc.array(mutation, { maxLength: 2 }), fc.array(fc.nat(), { minLength: 2, maxLength: 2 }), (t, kinds, picks) => {
        const x = mutate(renderTurn(t), kinds, picks);
        if (!accepts(x)) return;
        const why = filterBreak(x);
        const r = parseTurn(x);
        if (why === null) expect(r).toMatchObject({ ok: true });
        else blocked++;
        if (r.ok && why) expect(why).toMatch(/longer than|more than/); // only a cap blocks a valid turn
      }),
      { numRuns: 1500 },
    );
    expect(blocked).toBeGreaterThan(0); // the duplicate-name mutations
  });
});
