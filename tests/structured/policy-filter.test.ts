// The policy filter over real vocabularies (structured/policy-filter.ts):
//   - `apply` (which works on bitmask words, memoising verdicts by cursor state and token
//     shape) clears exactly the ids `banReason` bans, checked id by id, and the same ids as
//     the per-id filter it replaced (`applyPerId`) at every position of a walk;
//   - random walks under xgrammar's mask + the filter never run out of tokens, end with EOS
//     within max_tokens, and parse (no duplicate_slot, no truncation), also under tight caps.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { parseTurn } from '../../structured/turn/grammar.ts';
import { compileConstraint, type CompiledConstraint } from '../../structured/compile.ts';
import { allowedIds, maskHas } from '../../structured/constraint.ts';
import { POLICY_CAPS } from '../../structured/turn/caps.ts';
import { PolicyTurnFilter } from '../../structured/policy-filter.ts';
import type { TurnCaps } from '../../structured/turn/cursor.ts';
import { QWEN3_VOCAB_SIZE, qwen3Vocab, type TokenVocab } from '../../structured/vocab.ts';
import { replayConstraint } from '../../structured/replay.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { Rng } from '../../util/rng.ts';

const spec = { type: 'grammar' as const, grammar: POLICY_GRAMMAR };
const demoKept = Int32Array.from(
  (JSON.parse(readFileSync(new URL('../../models/tiny-demo/vocab_map.json', import.meta.url), 'utf8')) as { kept_ids: number[] }).kept_ids,
);

async function matcherFor(c: CompiledConstraint) {
  return c.xg.GrammarMatcher.createGrammarMatcher(c.grammar, [...c.vocab.stopIds]);
}

/** The filter's mask against the id-by-id reference at this position. */
function checkApply(filter: PolicyTurnFilter, mask: Int32Array, vocab: TokenVocab): Int32Array {
  const fast = mask.slice();
  filter.apply(fast);
  for (const id of allowedIds(mask, null, vocab.size)) expect(maskHas(fast, id), `id ${id}`).toBe(filter.banReason(id) === null);
  for (let w = 0; w < mask.length; w++) expect((fast[w] as number) & ~(mask[w] as number)).toBe(0); // only clears bits
  return fast;
}

interface Walk {
  text: string;
  ids: number[];
  ended: boolean;
}

/** Sample uniformly among the allowed ids (favouring EOS 1 in `eosEvery` when allowed) until EOS or max_tokens. */
async function walk(
  c: CompiledConstraint,
  maxTokens: number,
  seed: number,
  opts: { caps?: TurnCaps; exact?: (step: number) => boolean; eosEvery?: number; perId?: boolean } = {},
): Promise<Walk> {
  const m = await matcherFor(c);
  const filter = new PolicyTurnFilter(c.vocab, maxTokens, opts.caps ?? POLICY_CAPS);
  const rng = new Rng(seed);
  const ids: number[] = [];
  try {
    while (ids.length < maxTokens) {
      const mask = await m.getNextTokenBitmask();
      let masked: Int32Array;
      if (opts.exact?.(ids.length)) masked = checkApply(filter, mask, c.vocab);
      else if (opts.perId) {
        const old = mask.slice();
        filter.applyPerId(old);
        filter.apply(mask);
        expect(Array.from(mask), `position ${ids.length}`).toEqual(Array.from(old));
        masked = mask;
      } else {
        masked = mask;
        filter.apply(masked);
      }
      const allowed = allowedIds(masked, null, c.vocab.size);
      expect(allowed.length, `no token allowed after ${ids.length} tokens`).toBeGreaterThan(0);
      const eos = c.vocab.stopIds.find((s) => maskHas(masked, s));
      const id = eos !== undefined && rng.int(opts.eosEvery ?? 1_000_000) === 0 ? eos : (allowed[rng.int(allowed.length)] as number);
      expect(m.acceptToken(id)).toBe(true);
      filter.accept(id);
      ids.push(id);
      if (c.vocab.stopIds.includes(id)) break;
    }
  } finally {
    m.dispose();
  }
  const tok = qwen3Tokenizer();
  // indices of the vocabulary (a trimmed model's rows) -> token ids
  const tokenIds = ids.map((i) => (c.vocab.ids ? (c.vocab.ids[i] as number) : i));
  return { text: tok.decode(tokenIds, { skipSpecialTokens: true }), ids, ended: c.vocab.stopIds.includes(ids[ids.length - 1] as number) };
}

describe("a trimmed model's compact vocabulary (index = output row)", () => {
  it('gives at every position the full-vocabulary mask restricted to the kept ids (xgrammar + filter), over token ids', async () => {
    const compact = await compileConstraint({ ...spec, filter: 'policy_turn' }, qwen3Vocab(demoKept));
    const full = await compileConstraint({ ...spec, filter: 'policy_turn' }, qwen3Vocab());
    expect(compact.vocab.size).toBe(demoKept.length);
    let positions = 0;
    for (const [maxTokens, seed] of [
      [60, 31],
      [200, 32],
    ] as const) {
      const w = await walk(compact, maxTokens, seed, { eosEvery: 40 });
      const tokenIds = w.ids.map((i) => demoKept[i] as number);
      const a = await replayConstraint(compact, { maxTokens }, tokenIds);
      const b = await replayConstraint(full, { maxTokens }, tokenIds);
      expect(a.accepted && b.accepted).toBe(true);
      tokenIds.forEach((_, t) => {
        const ma = a.masks[a.maskIndex[t] as number] as Int32Array;
        const mb = b.masks[b.maskIndex[t] as number] as Int32Array;
        expect(ma.length).toBe(mb.length);
        const onKept = Array.from(allowedIds(mb, demoKept, QWEN3_VOCAB_SIZE));
        expect(Array.from(allowedIds(ma, null, QWEN3_VOCAB_SIZE)), `position ${t}`).toEqual(onKept);
        positions++;
      });
    }
    expect(positions).toBeGreaterThan(100);
  }, 240_000);
});

describe('PolicyTurnFilter', () => {
  it('apply == banReason id by id (trimmed demo vocabulary, random walks through every kind of position)', async () => {
    const c = await compileConstraint(spec, qwen3Vocab(demoKept));
    for (const seed of [1, 2]) {
      const w = await walk(c, 120, seed, { exact: (t) => t % 2 === 0, eosEvery: 50 });
      expect(parseTurn(w.text)).toMatchObject({ ok: true });
    }
  }, 120_000);

  it('apply == banReason on the full Qwen3 vocabulary at sampled positions (long tokens, dense fields)', async () => {
    const c = await compileConstraint(spec, qwen3Vocab());
    const w = await walk(c, 120, 7, { exact: (t) => t % 17 === 5 });
    expect(w.ended).toBe(true);
  }, 120_000);

  it('apply == applyPerId at every position: near max_tokens, tight caps with taken slot names, full vocabulary', async () => {
    const demo = await compileConstraint(spec, qwen3Vocab(demoKept));
    const caps: TurnCaps = { name: 6, purpose: 8, value: 9, plan: 12, execute: 10, slots: 4, slack: 3 };
    for (const seed of [21, 22, 23]) expect((await walk(demo, 200, seed, { caps, perId: true, eosEvery: 60 })).ended).toBe(true);
    for (const [maxTokens, seed] of [
      [40, 24],
      [70, 25],
    ] as const)
      expect((await walk(demo, maxTokens, seed, { perId: true })).ended).toBe(true);
    const full = await compileConstraint(spec, qwen3Vocab());
    expect((await walk(full, 60, 26, { caps, perId: true })).ended).toBe(true);
  }, 240_000);

  it('random walks never run out of tokens and end with EOS within max_tokens, parsing as valid turns', async () => {
    const c = await compileConstraint(spec, qwen3Vocab(demoKept));
    for (const [maxTokens, seed] of [
      [35, 1],
      [36, 2],
      [50, 3],
      [120, 4],
      [400, 5],
    ] as const) {
      // id by id near the end, where the budget rule decides
      const w = await walk(c, maxTokens, seed, { exact: (t) => t >= maxTokens - 40 });
      expect(w.ended, `max_tokens ${maxTokens}`).toBe(true);
      expect(w.ids.length).toBeLessThanOrEqual(maxTokens);
      const r = parseTurn(w.text);
      expect(r.ok, `${JSON.stringify(w.text)}: ${r.ok ? '' : r.detail}`).toBe(true);
    }
  }, 120_000);

  it('under tight caps too: fields stop at their cap, names stay distinct', async () => {
    const c = await compileConstraint(spec, qwen3Vocab(demoKept));
    const caps: TurnCaps = { name: 3, purpose: 4, value: 5, plan: 6, execute: 6, slots: 3, slack: 2 };
    for (const seed of [11, 12, 13, 14]) {
      const w = await walk(c, 300, seed, { caps, exact: (t) => t % 3 === 0, eosEvery: 40 });
      expect(w.ended).toBe(true);
      const r = parseTurn(w.text);
      expect(r.ok, `${JSON.stringify(w.text)}: ${r.ok ? '' : r.detail}`).toBe(true);
      if (r.ok) {
        expect(r.turn.state.length).toBeLessThanOrEqual(3);
        for (const s of r.turn.state) expect(Buffer.byteLength(s.name)).toBeLessThanOrEqual(3);
        expect(Buffer.byteLength(r.turn.plan)).toBeLessThanOrEqual(6);
      }
    }
  }, 120_000);
});
