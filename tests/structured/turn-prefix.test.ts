// The brute-force reference (turn-prefix.ts) against xgrammar on the same prefixes: two
// independent answers to "can this partial turn still become valid?" must agree.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { renderTurn } from '../../structured/turn/grammar.ts';
import type { PolicyTurn } from '../../core/types.ts';
import { ebnfPrefixAcceptor } from './accept.ts';
import { grammarText, viablePrefix } from './turn-prefix.ts';

let prefixOk: (text: string) => boolean;
beforeAll(async () => {
  prefixOk = await ebnfPrefixAcceptor(POLICY_GRAMMAR);
});

const bit = fc.constantFrom(
  'a',
  ' ',
  '|',
  ':',
  '-',
  '\n',
  '\t',
  '\v',
  '\r',
  'é',
  'x y',
  'STATE:',
  'PLAN:',
  'ACTION: ',
  'ASK',
  'EXECUTE:',
  '- ',
  ' | purpose: ',
  ' | status: ',
  'covered',
  'uncovered',
  ' | source: ',
  'memory',
  ' | value:',
  ' v',
);
const junk = fc.array(bit, { maxLength: 14 }).map((b) => b.join(''));
const turn: fc.Arbitrary<PolicyTurn> = fc.constant({
  state: [
    { name: 'budget', purpose: 'limit', status: 'covered', source: 'dialogue', value: 'under 1200' },
    { name: 'use', purpose: 'main use', status: 'uncovered', source: 'memory', value: '' },
  ],
  plan: 'ask',
  action: 'RETRIEVE',
  execute: 'laptop use',
});

describe('viablePrefix (reference) == xgrammar prefix acceptance', () => {
  it('on every prefix of a valid turn', () => {
    const text = renderTurn(fc.sample(turn, 1)[0] as PolicyTurn);
    for (let n = 0; n <= text.length; n++) {
      expect(viablePrefix(text.slice(0, n)), JSON.stringify(text.slice(0, n))).toBe(true);
      expect(prefixOk(text.slice(0, n))).toBe(true);
    }
  });

  it('on valid prefixes followed by junk', () => {
    const text = renderTurn(fc.sample(turn, 1)[0] as PolicyTurn);
    fc.assert(
      fc.property(fc.nat(text.length), junk, (n, tail) => {
        const p = text.slice(0, n) + tail;
        expect(viablePrefix(p), JSON.stringify(p)).toBe(prefixOk(p));
      }),
      { numRuns: 3000 },
    );
  });

  it('maps bytes the way xgrammar reads them: cut characters stay viable, invalid bytes do not', () => {
    expect(grammarText(Buffer.from('PLAN: \u4e2d', 'utf8').subarray(0, 7))).toBe('PLAN: é');
    expect(grammarText(Uint8Array.from([0x50, 0x80]))).toBeNull();
    expect(grammarText(Uint8Array.from([0xc3, 0x41]))).toBeNull();
    expect(grammarText(Uint8Array.from([0xf8]))).toBeNull();
  });
});
