// The refiner turn (structured/qref/turn.ts) and its grammar (turn-ebnf.ts), with xgrammar
// deciding acceptance: every rendered turn parses back and is accepted; on fuzzed text,
// accepted => parse ok or a length reason (lengths are the parser's), and parse ok =>
// accepted; the grammar compiles through the project's compile path over the Qwen3 vocabulary.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { refinerGrammarEbnf } from '../../../structured/qref/turn-ebnf.ts';
import { parseRefinerTurn, renderRefinerTurn, type RefinerCaps, type RefinerTurn } from '../../../structured/qref/turn.ts';
import { compileConstraint } from '../../../structured/compile.ts';
import { qwen3Vocab } from '../../../structured/vocab.ts';
import { ebnfAcceptor } from '../accept.ts';
import { mutateLines, mutationKinds } from '../../rollout/helpers/line-mutations.ts';

const CAPS: RefinerCaps = { maxQueries: 5, maxQueryChars: 60, maxRationaleChars: 80 };
const LENGTH_REASONS = ['query_too_long', 'rationale_too_long'];
let accepts: (text: string) => boolean;
let accepts2: (text: string) => boolean;
beforeAll(async () => {
  accepts = await ebnfAcceptor(refinerGrammarEbnf(CAPS.maxQueries));
  accepts2 = await ebnfAcceptor(refinerGrammarEbnf(2));
});

const GOOD = 'RATIONALE: the queries repeat the bridge; search the engineer instead\nQUERIES:\n- Amos Kell engineer born\n- Amos Kell Marrowby';

describe('parseRefinerTurn, worked examples', () => {
  it('parses the documented example', () => {
    expect(parseRefinerTurn(GOOD, CAPS)).toEqual({
      ok: true,
      turn: { rationale: 'the queries repeat the bridge; search the engineer instead', queries: ['Amos Kell engineer born', 'Amos Kell Marrowby'] },
    });
    expect(accepts(GOOD)).toBe(true);
  });

  it('tolerates trailing whitespace, CRLF and blank lines, and trims fields', () => {
    const loose = '\n  \nRATIONALE:   why  \r\n\nQUERIES: \t\n\n-   first   \r\n  \n- second\n\n';
    expect(parseRefinerTurn(loose, CAPS)).toEqual({ ok: true, turn: { rationale: 'why', queries: ['first', 'second'] } });
    expect(accepts(loose)).toBe(true);
  });

  it.each([
    ['', 'empty'],
    [' \n\t\n', 'empty'],
    ['QUERIES:\n- a', 'missing_rationale'],
    ['Sure! RATIONALE: x\nQUERIES:\n- a', 'unexpected_line'],
    ['RATIONALE:   \nQUERIES:\n- a', 'empty_rationale'],
    ['RATIONALE: x', 'missing_queries'],
    ['RATIONALE: x\n- a\nQUERIES:', 'missing_queries'],
    ['RATIONALE: x\nQUERIES: - a', 'unexpected_line'],
    ['RATIONALE: x\nQUERIES:', 'no_queries'],
    ['RATIONALE: x\nQUERIES:\n-', 'empty_query'],
    ['RATIONALE: x\nQUERIES:\n-    ', 'empty_query'],
    ['RATIONALE: x\nQUERIES:\n-a', 'unexpected_line'],
    ['RATIONALE: x\nQUERIES:\n* a', 'unexpected_line'],
    ['RATIONALE: x\nQUERIES:\n- a\nthanks!', 'unexpected_line'],
    ['RATIONALE: x\nQUERIES:\n- a\n- b\n- c\n- d\n- e\n- f', 'too_many_queries'],
    [`RATIONALE: x\nQUERIES:\n- ${'q'.repeat(61)}`, 'query_too_long'],
    [`RATIONALE: ${'r'.repeat(81)}\nQUERIES:\n- a`, 'rationale_too_long'],
  ])('%j -> %s', (text, reason) => {
    const r = parseRefinerTurn(text, CAPS);
    expect(r).toMatchObject({ ok: false, reason });
    if (!r.ok) expect(r.detail.length).toBeGreaterThan(0);
    expect(accepts(text)).toBe(LENGTH_REASONS.includes(reason)); // the grammar refuses all but the lengths
  });

  it('counts lengths in code points: 60 emoji are a 60-character query', () => {
    const q = '😀'.repeat(60);
    expect(parseRefinerTurn(`RATIONALE: x\nQUERIES:\n- ${q}`, CAPS)).toMatchObject({ ok: true });
    expect(parseRefinerTurn(`RATIONALE: x\nQUERIES:\n- ${q}😀`, CAPS)).toMatchObject({ ok: false, reason: 'query_too_long' });
  });

  it('the grammar bounds the number of queries by its parameter', () => {
    const two = 'RATIONALE: x\nQUERIES:\n- a\n\n- b';
    expect(accepts2(two)).toBe(true);
    expect(accepts2(`${two}\n- c`)).toBe(false);
    expect(accepts(`${two}\n- c`)).toBe(true);
  });
});

// Field text with what makes the format hard: pipes, dashes, headers, ASCII and non-ASCII
// whitespace, line breaks, non-ASCII letters, emoji.
const tricky = fc.constantFrom(' ', '\t', '\r', '\n', '\u00a0', '\u2028', '-', '- ', 'QUERIES:', 'RATIONALE:', ':', 'é', '中', '😀', '|');
const text = fc.array(fc.oneof(fc.string({ maxLength: 8 }), tricky), { maxLength: 6 }).map((p) => p.join(''));
const nonEmpty = text.filter((s) => /[^ \t\n\v\f\r]/.test(s));
const turn: fc.Arbitrary<RefinerTurn> = fc.record({ rationale: nonEmpty, queries: fc.array(nonEmpty, { minLength: 1, maxLength: CAPS.maxQueries }) });
const flat = (s: string) => s.replace(/[ \t\n\v\f\r]+/g, ' ').replace(/^[ ]+|[ ]+$/g, '');
const withinCaps = (t: RefinerTurn) =>
  [...flat(t.rationale)].length <= CAPS.maxRationaleChars && t.queries.every((q) => [...flat(q)].length <= CAPS.maxQueryChars);

// The refiner's own damage on top of the shared kinds: a bad bullet, an indented line.
const EXTRA = {
  dash: (lines: string[], i: number, r: number) => lines.map((l, j) => (j === i ? l.replace(/^- /, ['-', '-  ', '* ', '--'][r % 4] as string) : l)),
  indent: (lines: string[], i: number) => lines.map((l, j) => (j === i ? ` ${l}` : l)),
};
const mutation = mutationKinds(EXTRA);
const JUNK = ['', ' ', 'QUERIES:', 'RATIONALE: again', '-', '- ', '- more', 'ok', '\u00a0', '* item', '1. item'];
const mutate = (base: string, kinds: string[], picks: number[]) => mutateLines(base, kinds, picks, JUNK, EXTRA);

describe('refiner grammar against the parser (properties)', () => {
  it('structured/qref/turn.ebnf is the text refinerGrammarEbnf(5) writes (regenerate: node --import tsx -e "import(\'./structured/qref/turn-ebnf.ts\').then(m => process.stdout.write(m.refinerGrammarEbnf(5)))" > structured/qref/turn.ebnf)', () => {
    expect(readFileSync(new URL('../../../structured/qref/turn.ebnf', import.meta.url), 'utf8')).toBe(refinerGrammarEbnf(5));
  });

  it('every rendered turn is accepted, and parses back to its flattened fields when within the caps', () => {
    fc.assert(
      fc.property(turn, (t) => {
        const x = renderRefinerTurn(t);
        expect(accepts(x)).toBe(true);
        const r = parseRefinerTurn(x, CAPS);
        if (withinCaps(t)) expect(r).toEqual({ ok: true, turn: { rationale: flat(t.rationale), queries: t.queries.map(flat) } });
        else expect(r.ok ? 'ok' : r.reason).toMatch(/_too_long$/);
        if (r.ok) expect(renderRefinerTurn(r.turn)).toBe(x); // canonical text is a fixed point
      }),
      { numRuns: 500 },
    );
  });

  it('on fuzzed turns: accepted => ok or a length reason; ok => accepted', () => {
    let accepted = 0;
    let rejected = 0;
    fc.assert(
      fc.property(turn, fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.array(fc.nat(), { minLength: 3, maxLength: 3 }), (t, kinds, picks) => {
        const x = mutate(renderRefinerTurn(t), kinds, picks);
        const r = parseRefinerTurn(x, CAPS);
        const a = accepts(x);
        if (a) {
          accepted++;
          expect(r.ok || LENGTH_REASONS.includes(r.reason)).toBe(true);
        } else rejected++;
        if (r.ok) expect(a).toBe(true);
      }),
      { numRuns: 3000 },
    );
    // Both sides of the property were exercised.
    expect(accepted).toBeGreaterThan(300);
    expect(rejected).toBeGreaterThan(300);
  });

  it('on random text after a header: the same two implications', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.constantFrom('', 'RATIONALE: x\n', 'RATIONALE: x\nQUERIES:\n'), (s, head) => {
        const x = head + s;
        const r = parseRefinerTurn(x, CAPS);
        if (accepts(x)) expect(r.ok || LENGTH_REASONS.includes(r.reason)).toBe(true);
        if (r.ok) expect(accepts(x)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('compiles through structured/ (the path vLLM-bound and embedded sampling share) over the Qwen3 vocabulary', async () => {
    const c = await compileConstraint({ type: 'grammar', grammar: refinerGrammarEbnf(5) }, qwen3Vocab());
    expect(c.spec).toEqual({ type: 'grammar', grammar: refinerGrammarEbnf(5) });
    expect(c.hash).toMatch(/^[0-9a-f]{64}$/);
  }, 120_000);
});
