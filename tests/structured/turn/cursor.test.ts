// TurnCursor (structured/turn/cursor.ts): the shortest completion the policy filter's
// budget rule relies on. For every byte prefix of turns the filter lets through:
//   - prefix + completion parses (parseTurn ok, no duplicate name) and the EBNF accepts it;
//   - following the completion byte by byte breaks no rule and shortens it by one each time
//     (so the filter never leaves a position without a token: one byte token per step).
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { POLICY_GRAMMAR } from '../../../structured/turn/grammar-ebnf.ts';
import { ACTIONS, parseTurn, renderTurn, SOURCES, STATUSES } from '../../../structured/turn/grammar.ts';
import type { PolicyTurn } from '../../../core/types.ts';
import { MAX_COMPLETION, POLICY_CAPS, policyMinTokens } from '../../../structured/turn/caps.ts';
import { TurnCursor, type TurnCaps } from '../../../structured/turn/cursor.ts';
import { ebnfAcceptor } from '../accept.ts';
import { POLICY_MIN_TOKENS } from '../../../configs/schema.ts';

let accepts: (text: string) => boolean;
beforeAll(async () => {
  accepts = await ebnfAcceptor(POLICY_GRAMMAR);
});

const utf8 = (b: Buffer) => b.toString('utf8');
const latin1 = (s: string) => Buffer.from(s, 'latin1');
const word = fc.constantFrom('budget', 'use', 'x', 'a b', ' pad ', 'é', '中文', '😀', 'v|w', 'uncovered', 'x\ty');
const phrase = fc.array(word, { minLength: 1, maxLength: 3 }).map((w) => w.join(' '));
const turn: fc.Arbitrary<PolicyTurn> = fc.record({
  state: fc.uniqueArray(
    fc
      .record({ name: word, purpose: phrase, status: fc.constantFrom(...STATUSES), source: fc.constantFrom(...SOURCES), value: phrase })
      .map((s) => ({ ...s, value: s.status === 'uncovered' ? '' : s.value })),
    { selector: (s) => s.name.trim().replace('|', '/'), maxLength: 4 },
  ),
  plan: phrase,
  action: fc.constantFrom(...ACTIONS),
  execute: phrase,
});
/** Padding the grammar allows: blank lines and trailing whitespace. */
const padded = (t: PolicyTurn, pad: string) =>
  renderTurn(t)
    .split('\n')
    .map((l) => l + pad)
    .join('\n') + (pad ? `\n${pad}` : '');

/** The cursor after `bytes` fed as one-byte tokens, or null where the filter would have banned one. */
function cursorAt(bytes: Buffer, caps: TurnCaps): TurnCursor | null {
  const c = new TurnCursor(caps);
  for (const b of bytes) {
    if (c.push(b)) return null;
    const f = c.openField();
    if (f && f.bytes + f.reserve > f.cap) return null;
  }
  return c;
}

/** Checks the completion at every byte prefix of `bytes` the filter lets through. */
function checkPrefixes(bytes: Buffer, caps: TurnCaps): void {
  const run = new TurnCursor(caps);
  for (let n = 0; n <= bytes.length; n++) {
    checkCompletion(bytes.subarray(0, n), run.clone(), n % 4 === 0); // the walk is the slow part
    if (n === bytes.length || run.push(bytes[n] as number)) return;
    const f = run.openField();
    if (f && f.bytes + f.reserve > f.cap) return;
  }
}

function checkCompletion(prefix: Buffer, c: TurnCursor, walk: boolean): void {
  let rest = c.completion();
  expect(rest.length).toBeLessThanOrEqual(MAX_COMPLETION);
  const whole = Buffer.concat([prefix, latin1(rest)]);
  const r = parseTurn(utf8(whole));
  expect(r.ok, `${JSON.stringify(utf8(prefix))} + ${JSON.stringify(rest)}: ${r.ok ? '' : r.detail}`).toBe(true);
  expect(accepts(utf8(whole))).toBe(true);
  while (walk && rest.length) {
    expect(c.push(rest.charCodeAt(0))).toBeNull();
    const f = c.openField();
    if (f) expect(f.bytes + f.reserve).toBeLessThanOrEqual(f.cap);
    const next = c.completion();
    expect(next).toBe(rest.slice(1));
    rest = next;
  }
}

describe('TurnCursor.completion', () => {
  it('the shortest turn: "STATE:\\nPLAN:x\\nACTION:ASK\\nEXECUTE:x" (34 bytes), so max_tokens >= 35 with EOS', () => {
    expect(new TurnCursor(POLICY_CAPS).completion()).toBe('STATE:\nPLAN:x\nACTION:ASK\nEXECUTE:x');
    expect(policyMinTokens()).toBe(35);
    expect(POLICY_MIN_TOKENS).toBe(policyMinTokens()); // what the config check uses
  });

  it('completes mid-slot with the cheapest enum and a fresh name when the typed one is taken', () => {
    const at = (s: string) => (cursorAt(Buffer.from(s, 'utf8'), POLICY_CAPS) as TurnCursor).completion();
    expect(at('STATE:\n- a | purpose: p | status: cov')).toBe('ered | source: memory | value: x\nPLAN:x\nACTION:ASK\nEXECUTE:x');
    expect(at('STATE:\n- a | purpose: p | status: uncovered | source: memory | value:\n- a')).toBe(
      'x | purpose: x | status: uncovered | source: memory | value:\nPLAN:x\nACTION:ASK\nEXECUTE:x',
    );
    expect(at('STATE:\nPLAN: p\nACTION: RE')).toBe('TRIEVE\nEXECUTE:x');
    expect(at('STATE:\nPLAN: p\nACTION: ASK\nEXECUTE: q')).toBe('');
    const midChar = Buffer.concat([Buffer.from('STATE:\nPLAN: '), Buffer.from([0xe4])]); // first of 3 bytes
    expect((cursorAt(midChar, POLICY_CAPS) as TurnCursor).completion()).toBe('\x80\x80\nACTION:ASK\nEXECUTE:x');
  });

  it('for every byte prefix of a padded turn, completes it in valid, rule-abiding, one-shorter steps', () => {
    fc.assert(
      fc.property(turn, fc.constantFrom('', ' ', '\t\r', '\r'), (t, pad) => {
        checkPrefixes(Buffer.from(padded(t, pad), 'utf8'), POLICY_CAPS);
      }),
      { numRuns: 60 },
    );
  }, 180_000); // ~7 s alone; every byte prefix of 60 turns, slow on a loaded 2-core machine

  it('also under tight caps, where the fields are at their limits', () => {
    const caps: TurnCaps = { name: 6, purpose: 6, value: 6, plan: 6, execute: 6, slots: 2, slack: 3 };
    fc.assert(
      fc.property(turn, fc.constantFrom('', ' ', '\t\r', '  \n'), (t, pad) => {
        checkPrefixes(Buffer.from(padded(t, pad), 'utf8'), caps);
      }),
      { numRuns: 120 },
    );
  });
});

describe('TurnCursor rules', () => {
  const reasons = (s: string, caps: TurnCaps = POLICY_CAPS) => {
    const c = new TurnCursor(caps);
    return [...Buffer.from(s, 'utf8')].map((b) => c.push(b)).filter(Boolean);
  };
  it('bans a repeated slot name at its "|", as parseTurn reads names (trimmed)', () => {
    expect(reasons('STATE:\n- a | purpose: p | status: uncovered | source: memory | value:\n- a  | purpose')).toEqual(['slot name "a" appears twice in STATE']);
    expect(reasons('STATE:\n- a | purpose: p | status: uncovered | source: memory | value:\n- ab | purpose')).toEqual([]);
  });
  it('bans a field past its cap, slot lines past the count, whitespace past the slack', () => {
    const caps: TurnCaps = { ...POLICY_CAPS, plan: 5, slots: 1, slack: 2 };
    expect(reasons('STATE:\nPLAN: abcd', caps)).toEqual([]);
    expect(reasons('STATE:\nPLAN: abcde', caps)).toEqual(['plan longer than 5 bytes']);
    expect(reasons('STATE:\n- a | purpose: p | status: uncovered | source: memory | value:\n-', caps)).toEqual(['more than 1 slot lines']);
    expect(reasons('STATE:  \n\n', caps)).toEqual(['more than 2 bytes of whitespace outside fields']);
    // A blank line's own "\n" is free: with the slack used up, the line can still end.
    expect(reasons('STATE:\n  \nPLAN: x', caps)).toEqual([]);
  });
});
