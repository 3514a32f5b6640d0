// The batched scheduler over the prefix-hash model (no tfjs): one forward pass per step for
// every live sequence, sequences joining and leaving between steps, the max-concurrency cap
// and FIFO admission, the per-step token budget, cancellation and drain, and the prefix
// cache: G identical prompts arriving at once compute their prefill once.
import { describe, expect, it } from 'vitest';
import { BatchScheduler, type BatchOptions } from '../../serve/batch-scheduler.ts';
import { Generation, type ChoiceSpec } from '../../serve/generation.ts';
import { PrefixCache } from '../../serve/prefix-cache.ts';
import { Scheduler } from '../../serve/scheduler.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { prefixHashModel } from './prefix-hash-model.ts';

const tok = qwen3Tokenizer();
const words = tok.encode(' the cat sat on a mat and then it ran away');

function spec(over: Partial<ChoiceSpec> = {}): ChoiceSpec {
  return {
    promptIds: Array.from({ length: 40 }, (_, i) => words[i % words.length] as number),
    maxTokens: 6,
    sampling: { temperature: 1, topP: 0.9, topK: 0 },
    seed: 99,
    choiceIndex: 0,
    stop: [],
    stopTokenIds: [],
    ignoreEos: true,
    topLogprobs: 0,
    ...over,
  };
}

type Model = ReturnType<typeof prefixHashModel>;

function batched(model: Model, over: Partial<BatchOptions> = {}) {
  return new BatchScheduler(model, { maxConcurrency: 8, maxBatchedTokens: 64, blockSize: 8, cache: null, ...over });
}

/** Prompt tokens the model computed (feeds of prompt positions; a decode feeds one id after the prompt). */
const computedIds = (model: Model) => model.steps.flat().reduce((s, f) => s + f.ids.length, 0);

describe('BatchScheduler', () => {
  it('runs one forward pass per step for all live sequences; results equal the interleaved ones', async () => {
    const specs = [0, 1, 2, 3].map((i) => spec({ choiceIndex: i, promptIds: spec().promptIds.slice(0, 9 + 7 * i), maxTokens: 3 + i }));
    const ref = prefixHashModel({ eosBias: -50 });
    const inter = new Scheduler(8);
    const want = await Promise.all(specs.map((s) => inter.submit(new Generation(ref, null, tok, s))));
    const model = prefixHashModel({ eosBias: -50 });
    const s = batched(model);
    const got = await Promise.all(specs.map((sp) => s.submit(new Generation(model, null, tok, sp))));
    expect(got.map((r) => [r.ids, r.logprobs])).toEqual(want.map((r) => [r.ids, r.logprobs]));
    // step 1: the prompts in order within the budget of 64: 9 + 16 + 23, then 2 of the 4th's blocks of 8
    expect(model.steps[0]!.map((f) => [f.seq, f.ids.length])).toEqual([
      [0, 9],
      [1, 16],
      [2, 23],
      [3, 16],
    ]);
    expect(model.steps.every((st) => new Set(st.map((f) => f.seq)).size === st.length)).toBe(true); // one item per sequence
    expect(Math.max(...model.steps.map((st) => st.length))).toBe(4); // all four together at some step
    // sequences leave as they finish: the last steps hold only the longest
    expect(model.steps[model.steps.length - 1]!.map((f) => f.seq)).toEqual([3]);
    expect(model.openSequences()).toBe(0);
  });

  it('keeps each step within the token budget (at least one prompt block runs)', async () => {
    const model = prefixHashModel({ eosBias: -50 });
    const s = batched(model, { maxBatchedTokens: 20 });
    await Promise.all([0, 1, 2].map((i) => s.submit(new Generation(model, null, tok, spec({ choiceIndex: i })))));
    for (const st of model.steps) expect(st.reduce((n, f) => n + f.ids.length, 0)).toBeLessThanOrEqual(20);
    // prompts are cut at block (8) boundaries only
    for (const st of model.steps) for (const f of st) if (f.ids.length > 1) expect(f.ids.length % 8).toBe(0);
  });

  it('caps live sequences and admits in FIFO order', async () => {
    const model = prefixHashModel({ eosBias: -50 });
    const s = batched(model, { maxConcurrency: 2 });
    let maxOpen = 0;
    const orig = model.newSequence.bind(model);
    model.newSequence = (a) => {
      const seq = orig(a);
      maxOpen = Math.max(maxOpen, model.openSequences());
      return seq;
    };
    const done: number[] = [];
    await Promise.all(
      [0, 1, 2, 3].map((i) => s.submit(new Generation(model, null, tok, spec({ choiceIndex: i, maxTokens: 2 + (i % 2) }))).then(() => done.push(i))),
    );
    expect(maxOpen).toBe(2);
    expect(model.steps.every((st) => st.length <= 2)).toBe(true);
    expect(done.slice(0, 2).sort()).toEqual([0, 1]);
  });

  it('cancels an aborted sequence between steps (its cache freed, the others go on), then drains', async () => {
    const model = prefixHashModel({ eosBias: -50 });
    const s = batched(model);
    const ctl = new AbortController();
    const orig = model.forward.bind(model);
    model.forward = (items, bs) => {
      if (model.steps.length === 3) ctl.abort(new Error('client disconnected'));
      return orig(items, bs);
    };
    const victim = s.submit(new Generation(model, null, tok, spec({ maxTokens: 100 })), ctl.signal);
    const other = s.submit(new Generation(model, null, tok, spec({ choiceIndex: 1, maxTokens: 10 })));
    await expect(victim).rejects.toThrow('client disconnected');
    expect((await other).ids).toHaveLength(10);
    // the victim was in the 4th pass (the one in progress when it was cancelled), in none after
    expect(model.steps.slice(4).every((st) => st.every((f) => f.seq !== 0))).toBe(true);
    expect(model.openSequences()).toBe(0);
    await s.drain();
    await expect(s.submit(new Generation(model, null, tok, spec()))).rejects.toThrow('shutting down');
  });

  it('G identical prompts arriving together compute the prefill once; the others wait one step and take it from the cache', async () => {
    const model = prefixHashModel({ eosBias: -50 });
    const cache = new PrefixCache(1e6, 8, 4 * model.support!.length);
    const s = batched(model, { cache, maxBatchedTokens: 64 });
    const prompt = spec().promptIds.slice(0, 37); // 4 full blocks and a tail of 5
    const gens = [0, 1, 2, 3].map((i) => new Generation(model, null, tok, spec({ promptIds: prompt, choiceIndex: i, seed: 10 + i, maxTokens: 4 })));
    const got = await Promise.all(gens.map((g) => s.submit(g)));
    expect(computedIds(model)).toBe(37 + 4 * 4 - 4); // the prompt once; every choice's first token comes from the prompt's logits
    expect(got.map((r) => r.cachedTokens)).toEqual([0, 37, 37, 37]);
    // the same as without a cache, bit for bit
    const plain = prefixHashModel({ eosBias: -50 });
    const ref = await Promise.all(
      [0, 1, 2, 3].map((i) => batched(plain).submit(new Generation(plain, null, tok, spec({ promptIds: prompt, choiceIndex: i, seed: 10 + i, maxTokens: 4 })))),
    );
    expect(got.map((r) => [r.ids, r.logprobs])).toEqual(ref.map((r) => [r.ids, r.logprobs]));
  });

  it('a prompt sharing a prefix reuses its full blocks only; another adapter shares nothing', async () => {
    const model = prefixHashModel({ eosBias: -50 });
    const cache = new PrefixCache(1e6, 8, 4 * model.support!.length);
    const s = batched(model, { cache });
    const base = spec().promptIds;
    await s.submit(new Generation(model, null, tok, spec({ promptIds: base.slice(0, 30) })));
    const longer = await s.submit(new Generation(model, null, tok, spec({ promptIds: base.slice(0, 40) })));
    expect(longer.cachedTokens).toBe(24); // blocks [0, 24); [24, 30) was a tail, not a block
    const lora = await model.loadAdapter('x');
    const other = await s.submit(new Generation(model, lora, tok, spec({ promptIds: base.slice(0, 40) })));
    expect(other.cachedTokens).toBe(0);
  });
});
