// The refiner-turn filter (structured/refiner-filter.ts): the shortest completion of each
// kind of prefix, worked by hand from the refiner grammar, and the character caps; random walks
// under xgrammar's mask + the filter (full Qwen3 vocabulary, and a trimmed one) end with EOS by
// max_tokens and parse as refiner turns under the default caps (also with room for 300 tokens,
// where uniform tokens fill the rationale and the queries to their caps); without the filter
// the same walks run out of tokens; the server takes the field on the refiner grammar only.
import { describe, expect, it } from 'vitest';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { refinerGrammarEbnf } from '../../structured/qref/turn-ebnf.ts';
import { parseRefinerTurn } from '../../structured/qref/turn.ts';
import { compileConstraint, type CompiledConstraint } from '../../structured/compile.ts';
import { allowedIds, maskHas } from '../../structured/constraint.ts';
import { advance, advanceChecked, overCap, REFINER_MIN_TOKENS, REFINER_START, RefinerTurnFilter, shortestCompletion } from '../../structured/refiner-filter.ts';
import { parseConstraint } from '../../serve/structured-request.ts';
import { qwen3Vocab } from '../../structured/vocab.ts';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { Rng } from '../../util/rng.ts';
import { REFINER_MIN_TOKENS as CONFIG_MIN_TOKENS } from '../../configs/qref.ts';

const GRAMMAR = refinerGrammarEbnf(5);
const caps = { maxQueries: 5, maxQueryChars: 200, maxRationaleChars: 400 }; // qref.turn's defaults, the filter's caps
const after = (text: string) => shortestCompletion(advance(REFINER_START, new TextEncoder().encode(text)));

describe('shortestCompletion', () => {
  it('counts the bytes still needed for a whole turn, by where the prefix stands', () => {
    const cases: [string, number][] = [
      ['', 24], // RATIONALE:x\nQUERIES:\n- x
      ['  ', 25], // spaces on a blank line: "\n" first
      ['\n', 24],
      ['RATIO', 5 + 1 + 13],
      ['RATIONALE:', 14],
      ['RATIONALE:  ', 14],
      ['RATIONALE: a', 13],
      ['RATIONALE: a\n', 12],
      ['RATIONALE: a\n ', 13], // a blank line must end before QUERIES:
      ['RATIONALE: a\nQUE', 5 + 4],
      ['RATIONALE: a\nQUERIES:', 4],
      ['RATIONALE: a\nQUERIES:\n', 3],
      ['RATIONALE: a\nQUERIES:\n\t', 4],
      ['RATIONALE: a\nQUERIES:\n-', 2],
      ['RATIONALE: a\nQUERIES:\n- ', 1],
      ['RATIONALE: a\nQUERIES:\n- q', 0],
      ['RATIONALE: a\nQUERIES:\n- q\n', 0],
      ['RATIONALE: a\nQUERIES:\n- q\n-', 2],
    ];
    for (const [text, n] of cases) expect(after(text), JSON.stringify(text)).toBe(n);
    // "é" half written (its lead byte 0xc3 only): one continuation byte owed on top of the 13
    expect(shortestCompletion(advance(REFINER_START, Uint8Array.from([...new TextEncoder().encode('RATIONALE: caf'), 0xc3])))).toBe(14);
    expect(REFINER_MIN_TOKENS).toBe(25);
    // the caps, in bytes of the field: 400 for the rationale, 200 for a query (é is two)
    const at = (text: string) => advance(REFINER_START, new TextEncoder().encode(text));
    expect(overCap(at(`RATIONALE: ${'a'.repeat(400)}`))).toBe(false);
    expect(overCap(at(`RATIONALE: ${'a'.repeat(401)}`))).toBe(true);
    expect(overCap(at(`RATIONALE: ${'é'.repeat(201)}`))).toBe(true); // 201 characters, 402 bytes: stricter than the parser
    // a token that passes the cap and ends the line in the same breath ("club.\n" on a 199-byte query) is over it
    const q199 = at(`RATIONALE: a\nQUERIES:\n- ${'q'.repeat(199)}`);
    expect(advanceChecked(q199, new TextEncoder().encode('.\n')).over).toBe(false); // 200 bytes, then the line ends
    const passed = advanceChecked(q199, new TextEncoder().encode('b.\n'));
    expect([passed.over, overCap(passed.cursor)]).toEqual([true, false]); // 201 bytes on the way; the state after says nothing
    // a broken sequence (a lead byte, then a plain byte) ends there: the next byte counts afresh
    expect(shortestCompletion(advance(REFINER_START, Uint8Array.from([...new TextEncoder().encode('RATIONALE: a'), 0xe2, 0x61])))).toBe(13);
    expect(overCap(at(`RATIONALE: a\nQUERIES:\n- ${'q'.repeat(200)}`))).toBe(false);
    expect(overCap(at(`RATIONALE: a\nQUERIES:\n- ${'q'.repeat(200)}\n- ${'q'.repeat(201)}`))).toBe(true);
    expect(CONFIG_MIN_TOKENS).toBe(REFINER_MIN_TOKENS); // what the config check uses
  });
});

interface Walk {
  text: string;
  ended: boolean;
  tokens: number;
}

/** Uniform random tokens among the allowed ones (EOS 1 in `eosEvery` when allowed) until EOS or max_tokens. */
async function walk(c: CompiledConstraint, maxTokens: number, seed: number, filtered = true, eosEvery = 1_000_000, longLines = false): Promise<Walk> {
  const m = await c.xg.GrammarMatcher.createGrammarMatcher(c.grammar, [...c.vocab.stopIds]);
  const filter = filtered ? new RefinerTurnFilter(c.vocab, maxTokens) : null;
  const rng = new Rng(seed);
  const ids: number[] = [];
  try {
    while (ids.length < maxTokens) {
      const mask = await m.getNextTokenBitmask();
      filter?.apply(mask);
      const all = allowedIds(mask, null, c.vocab.size);
      // longLines: while a token with a visible character and no newline is allowed, take one (fields grow to their caps)
      const visible = (b: Uint8Array) => !b.includes(0x0a) && b.some((x) => x > 0x20);
      const flat = longLines ? all.filter((i) => visible(c.vocab.bytes(i)) && !c.vocab.stopIds.includes(i)) : [];
      const allowed = flat.length ? Int32Array.from(flat) : all;
      expect(allowed.length, `no token allowed after ${ids.length} tokens`).toBeGreaterThan(0);
      const eos = c.vocab.stopIds.find((s) => maskHas(mask, s));
      const id = eos !== undefined && !longLines && rng.int(eosEvery) === 0 ? eos : (allowed[rng.int(allowed.length)] as number);
      expect(m.acceptToken(id)).toBe(true);
      filter?.accept(id);
      ids.push(id);
      if (c.vocab.stopIds.includes(id)) break;
    }
  } finally {
    m.dispose();
  }
  const tokenIds = ids.map((i) => (c.vocab.ids ? (c.vocab.ids[i] as number) : i));
  return { text: qwen3Tokenizer().decode(tokenIds, { skipSpecialTokens: true }), ended: c.vocab.stopIds.includes(ids.at(-1) as number), tokens: ids.length };
}

describe('RefinerTurnFilter', () => {
  it('random walks end with EOS by max_tokens and parse as refiner turns (full Qwen3 vocabulary)', async () => {
    const c = await compileConstraint({ type: 'grammar', grammar: GRAMMAR, filter: 'refiner_turn' }, qwen3Vocab());
    for (const [maxTokens, seed] of [
      [25, 1],
      [26, 2],
      [40, 3],
      [96, 4],
      [300, 8],
    ] as const) {
      const w = await walk(c, maxTokens, seed);
      expect(w.ended, `max_tokens ${maxTokens}: ${JSON.stringify(w.text)}`).toBe(true);
      expect(w.tokens).toBeLessThanOrEqual(maxTokens);
      const r = parseRefinerTurn(w.text, caps);
      expect(r.ok, `${JSON.stringify(w.text)}: ${r.ok ? '' : r.detail}`).toBe(true);
    }
  }, 240_000);

  it('lines that never end by choice stop at the caps: a 400-character rationale, 200-character queries', async () => {
    const c = await compileConstraint({ type: 'grammar', grammar: GRAMMAR, filter: 'refiner_turn' }, qwen3Vocab());
    for (const seed of [9, 10]) {
      const w = await walk(c, 600, seed, true, 1_000_000, true);
      expect(w.ended).toBe(true);
      const r = parseRefinerTurn(w.text, caps);
      expect(r.ok, r.ok ? '' : r.detail).toBe(true);
      if (!r.ok) continue;
      // each field stopped within a token (at most 128 bytes) of its cap, in bytes
      const bytes = (x: string) => new TextEncoder().encode(x).length;
      expect(bytes(r.turn.rationale)).toBeGreaterThan(400 - 128);
      expect(r.turn.queries).toHaveLength(5);
      for (const q of r.turn.queries) expect(bytes(q)).toBeGreaterThan(200 - 128);
    }
  }, 240_000);

  it('without the filter the same walks are cut at max_tokens', async () => {
    const c = await compileConstraint({ type: 'grammar', grammar: GRAMMAR }, qwen3Vocab());
    for (const [maxTokens, seed] of [
      [40, 3],
      [96, 4],
    ] as const)
      expect((await walk(c, maxTokens, seed, false)).ended).toBe(false);
  }, 240_000);

  it("a trimmed vocabulary (the demo corpus's tokens) keeps every turn inside max_tokens too", async () => {
    const tok = qwen3Tokenizer();
    const kept = Int32Array.from(
      [
        ...new Set(
          [...Array(256).keys()]
            .map((b) => tok.encode(String.fromCharCode(b)))
            .flat()
            .concat(tok.encode('RATIONALE: the queries name the wrong bridge\nQUERIES:\n- Amos Kell born\n- Kestwick Bridge'), [151643, 151644, 151645]),
        ),
      ].sort((a, b) => a - b),
    );
    const c = await compileConstraint({ type: 'grammar', grammar: GRAMMAR, filter: 'refiner_turn' }, qwen3Vocab(kept));
    for (const seed of [5, 6, 7]) {
      const w = await walk(c, 30, seed, true, 20);
      expect(w.ended).toBe(true);
      expect(parseRefinerTurn(w.text, caps).ok).toBe(true);
    }
  }, 240_000);
});

describe('gsteer_token_filter "refiner_turn" in a request', () => {
  it('runs on the refiner grammar with max_tokens >= 25 only', () => {
    const body = (grammar: string) => ({ structured_outputs: { grammar }, gsteer_token_filter: 'refiner_turn' });
    expect(parseConstraint(body(GRAMMAR), 96, false)).toEqual({ type: 'grammar', grammar: GRAMMAR, filter: 'refiner_turn' });
    expect(() => parseConstraint(body(POLICY_GRAMMAR), 96, false)).toThrow(/runs on top of the QREF refiner grammar only/);
    expect(() => parseConstraint(body(GRAMMAR), 24, false)).toThrow(/needs max_tokens >= 25 .* but max_tokens is 24/);
  });
});
