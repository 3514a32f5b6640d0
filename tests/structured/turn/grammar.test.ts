// The policy-turn grammar (structured/turn/grammar.ts): golden examples of every invalidity reason,
// a fuzz test that never throws, and round-trip properties.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { parseTurn, renderTurn, STATUSES, SOURCES, ACTIONS } from '../../../structured/turn/grammar.ts';
import type { EvidenceSlot, InvalidReason, PolicyTurn } from '../../../core/types.ts';
import { Rng } from '../../../util/rng.ts';

const GOOD = `STATE:
- budget | purpose: spending limit for the laptop | status: covered | source: dialogue | value: under 1200 EUR
- use_case | purpose: main workloads | status: uncovered | source: dialogue | value:
PLAN: ask about the main workloads before comparing models
ACTION: ASK
EXECUTE: What will you mainly use the laptop for?`;

const ALL_REASONS: InvalidReason[] = [
  'empty',
  'missing_section',
  'duplicate_section',
  'bad_slot',
  'bad_status',
  'bad_source',
  'unknown_action',
  'empty_execute',
  'trailing_text',
  'truncated',
  'section_order',
  'unexpected_line',
  'empty_plan',
  'duplicate_slot',
];

describe('parseTurn golden', () => {
  it('parses the documented example field by field and renders it back byte for byte', () => {
    const r = parseTurn(GOOD);
    expect(r).toEqual({
      ok: true,
      turn: {
        state: [
          { name: 'budget', purpose: 'spending limit for the laptop', status: 'covered', source: 'dialogue', value: 'under 1200 EUR' },
          { name: 'use_case', purpose: 'main workloads', status: 'uncovered', source: 'dialogue', value: '' },
        ],
        plan: 'ask about the main workloads before comparing models',
        action: 'ASK',
        execute: 'What will you mainly use the laptop for?',
      },
    });
    if (r.ok) expect(renderTurn(r.turn)).toBe(GOOD);
  });

  it('accepts an empty state, trailing whitespace, CRLF and blank lines', () => {
    const text = 'STATE:  \r\n\r\nPLAN: look in memory first \r\nACTION: RETRIEVE\r\nEXECUTE: laptop budget\r\n\n  \n';
    const r = parseTurn(text);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.turn).toEqual({ state: [], plan: 'look in memory first', action: 'RETRIEVE', execute: 'laptop budget' });
      expect(renderTurn(r.turn)).toBe('STATE:\nPLAN: look in memory first\nACTION: RETRIEVE\nEXECUTE: laptop budget');
    }
  });

  it('keeps "|" inside a value (the value is the rest of the line)', () => {
    const r = parseTurn(GOOD.replace('under 1200 EUR', 'under 1200 EUR | maybe 1300'));
    expect(r.ok && r.turn.state[0]?.value).toBe('under 1200 EUR | maybe 1300');
  });

  const cases: [InvalidReason, string, string][] = [
    ['empty', '', 'the output is empty'],
    ['empty', ' \n\t\n', 'the output is empty'],
    ['missing_section', GOOD.split('\nEXECUTE')[0] as string, 'EXECUTE: is missing'],
    ['missing_section', 'STATE:', 'PLAN: is missing'],
    ['duplicate_section', GOOD.replace('ACTION: ASK', 'ACTION: ASK\nACTION: STOP'), 'line 6: ACTION: appears a second time'],
    ['duplicate_section', `${GOOD}\nPLAN: again`, 'line 7: PLAN: appears a second time'],
    ['section_order', 'STATE:\nACTION: ASK\nPLAN: x\nEXECUTE: y', 'line 2: ACTION: before PLAN:'],
    ['bad_slot', GOOD.replace('- budget | purpose:', '- budget | purp:'), 'line 2'],
    ['bad_slot', GOOD.replace('| value: under 1200 EUR', '| value:'), 'a covered slot needs a value'],
    [
      'bad_slot',
      GOOD.replace('| status: uncovered | source: dialogue | value:', '| status: uncovered | source: dialogue | value: x'),
      'an uncovered slot must have an empty value',
    ],
    ['bad_slot', GOOD.replace('- budget |', '-  |'), 'slot name and purpose must be non-empty'],
    ['bad_status', GOOD.replace('status: covered', 'status: done'), 'status "done" is not one of uncovered, partial, covered'],
    ['bad_source', GOOD.replace('source: dialogue | value: under', 'source: web | value: under'), 'source "web" is not one of profile, memory, dialogue'],
    ['unknown_action', GOOD.replace('ACTION: ASK', 'ACTION: ask'), 'action "ask" is not one of RETRIEVE, ASK, STOP'],
    ['unknown_action', GOOD.replace('ACTION: ASK', 'ACTION: ASK then STOP'), 'is not one of'],
    ['empty_execute', GOOD.replace('EXECUTE: What will you mainly use the laptop for?', 'EXECUTE:   '), 'EXECUTE is empty'],
    ['empty_plan', GOOD.replace(/PLAN: .*/, 'PLAN:'), 'PLAN is empty'],
    ['trailing_text', `${GOOD}\nThanks!`, 'line 7: "Thanks!" after EXECUTE'],
    ['unexpected_line', `Sure, here is my turn.\n${GOOD}`, 'line 1: "Sure, here is my turn.": the output must start with "STATE:"'],
    ['unexpected_line', GOOD.replace('ACTION: ASK', 'and more plan\nACTION: ASK'), 'expected "ACTION:"'],
    ['unexpected_line', GOOD.replace('- budget', 'budget'), 'expected a slot line'],
    ['unexpected_line', GOOD.replace('STATE:', 'STATE: budget'), 'nothing may follow "STATE:"'],
    ['unexpected_line', `<think>\n</think>\n${GOOD}`, 'line 1'],
    ['duplicate_slot', GOOD.replace('- use_case', '- budget'), 'slot "budget" appears twice'],
  ];
  for (const [reason, text, detail] of cases) {
    it(`${reason}: ${JSON.stringify(text.slice(0, 50))}…`, () => {
      const r = parseTurn(text);
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.reason).toBe(reason);
        expect(r.detail).toContain(detail);
      }
    });
  }
});

// Canonical field generators: single-line, trimmed, no "|" in name/purpose.
const word = fc.stringMatching(/^[A-Za-z0-9_'?,.:;()€$-]{1,12}$/);
const phrase = fc.array(word, { minLength: 1, maxLength: 6 }).map((w) => w.join(' '));
const slotArb: fc.Arbitrary<EvidenceSlot> = fc
  .record({
    name: word,
    purpose: phrase,
    status: fc.constantFrom(...STATUSES),
    source: fc.constantFrom(...SOURCES),
    value: fc.oneof(
      phrase,
      phrase.map((p) => `${p} | ${p}`),
    ),
  })
  .map((s) => ({ ...s, value: s.status === 'uncovered' ? '' : s.value }));
const turnArb: fc.Arbitrary<PolicyTurn> = fc.record({
  state: fc.uniqueArray(slotArb, { selector: (s) => s.name, maxLength: 6 }),
  plan: phrase,
  action: fc.constantFrom(...ACTIONS),
  execute: phrase,
});

describe('round trip', () => {
  it('parseTurn(renderTurn(t)) gives t back', () => {
    fc.assert(
      fc.property(turnArb, (t) => {
        expect(parseTurn(renderTurn(t))).toEqual({ ok: true, turn: t });
      }),
      { numRuns: 500 },
    );
  });
  it('renderTurn(parseTurn(x)) === x for canonical x, also with trailing whitespace added', () => {
    fc.assert(
      fc.property(turnArb, fc.array(fc.constantFrom(' ', '\t', '\r'), { maxLength: 3 }), (t, pad) => {
        const x = renderTurn(t);
        const padded =
          x
            .split('\n')
            .map((l) => l + pad.join(''))
            .join('\n') + '\n\n';
        const r = parseTurn(padded);
        expect(r.ok).toBe(true);
        if (r.ok) expect(renderTurn(r.turn)).toBe(x);
      }),
      { numRuns: 300 },
    );
  });
  it('renderTurn flattens newlines and "|" in name/purpose so the output still parses', () => {
    const t: PolicyTurn = {
      state: [{ name: 'a|b', purpose: 'p\nq', status: 'partial', source: 'memory', value: 'v\n w' }],
      plan: 'x\ny',
      action: 'STOP',
      execute: 'final\nquery',
    };
    const r = parseTurn(renderTurn(t));
    expect(r).toEqual({
      ok: true,
      turn: {
        state: [{ name: 'a/b', purpose: 'p q', status: 'partial', source: 'memory', value: 'v w' }],
        plan: 'x y',
        action: 'STOP',
        execute: 'final query',
      },
    });
  });
});

describe('fuzz: never throws, always classifies', () => {
  const classify = (text: string) => {
    const r = parseTurn(text);
    if (r.ok) {
      // Anything accepted must be canonical after rendering, and re-parse to the same turn.
      expect(parseTurn(renderTurn(r.turn))).toEqual(r);
    } else {
      expect(ALL_REASONS).toContain(r.reason);
      expect(r.detail.length).toBeGreaterThan(0);
    }
    return r.ok;
  };
  it('random strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        classify(s);
      }),
      { numRuns: 2000 },
    );
  });
  it('mutations of valid turns (deleted, swapped, duplicated, truncated, garbled lines)', () => {
    const rng = new Rng(7);
    const samples = fc.sample(turnArb, { numRuns: 400, seed: 11 });
    let accepted = 0;
    let total = 0;
    const junk = ['', 'STATE:', 'PLAN:', 'ACTION: STOP', 'EXECUTE:', '-', '- x |', 'hello', '|||', 'value:', '<|im_end|>'];
    for (const t of samples) {
      const lines = renderTurn(t).split('\n');
      for (let k = 0; k < 8; k++) {
        const m = [...lines];
        const i = rng.int(m.length);
        switch (rng.int(6)) {
          case 0:
            m.splice(i, 1);
            break;
          case 1: {
            const j = rng.int(m.length);
            [m[i], m[j]] = [m[j] as string, m[i] as string];
            break;
          }
          case 2:
            m.splice(i, 0, m[i] as string);
            break;
          case 3:
            m.splice(i + 1);
            m[i] = (m[i] as string).slice(0, rng.int((m[i] as string).length + 1));
            break;
          case 4:
            m.splice(i, 0, junk[rng.int(junk.length)] as string);
            break;
          default: {
            const l = m[i] as string;
            const p = rng.int(l.length + 1);
            m[i] = l.slice(0, p) + String.fromCharCode(32 + rng.int(95)) + l.slice(p);
          }
        }
        total++;
        if (classify(m.join('\n'))) accepted++;
      }
    }
    // Mutations mostly break the grammar; a few (e.g. an inserted blank line) are harmless.
    expect(total).toBe(3200);
    expect(accepted).toBeLessThan(total);
    expect(accepted).toBeGreaterThan(0);
  });
});
