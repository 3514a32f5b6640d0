import { describe, expect, it } from 'vitest';
import { Generation, type ChoiceSpec } from '../../serve/generation.ts';
import { Scheduler } from '../../serve/scheduler.ts';
import { EOS_IDS, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { prefixHashModel } from './prefix-hash-model.ts';

const tok = qwen3Tokenizer();

function spec(over: Partial<ChoiceSpec> = {}): ChoiceSpec {
  return {
    promptIds: tok.encode('Once upon a time'),
    maxTokens: 12,
    sampling: { temperature: 1, topP: 0.95, topK: 0 },
    seed: 1234,
    choiceIndex: 0,
    stop: [],
    stopTokenIds: [],
    ignoreEos: false,
    topLogprobs: 0,
    ...over,
  };
}

describe('Generation', () => {
  it('prefills once, then feeds one id per step; EOS ends with stop and is kept', async () => {
    const model = prefixHashModel({ eosBias: 3 });
    const g = new Generation(model, null, tok, spec({ maxTokens: 200 }));
    while (!(await g.step()));
    const r = g.result();
    expect(model.feeds[0]!.ids).toEqual(spec().promptIds);
    expect(model.feeds.slice(1).every((f) => f.ids.length === 1)).toBe(true);
    expect(r.finishReason).toBe('stop');
    expect(EOS_IDS).toContain(r.ids[r.ids.length - 1]);
    expect(r.ids).toHaveLength(model.feeds.length);
    expect(model.openSequences()).toBe(0);
  });

  it('stops with length at max_tokens, and ignore_eos runs to the end', async () => {
    const model = prefixHashModel({ eosBias: 3 });
    const g = new Generation(model, null, tok, spec({ maxTokens: 9, ignoreEos: true }));
    while (!(await g.step()));
    expect(g.result().finishReason).toBe('length');
    expect(g.result().ids).toHaveLength(9);
  });
});

describe('Scheduler', () => {
  it('interleaves decode steps round-robin and caps live sequences', async () => {
    const model = prefixHashModel({ eosBias: -50 });
    const s = new Scheduler(2);
    const gens = [0, 1, 2].map((i) => new Generation(model, null, tok, spec({ choiceIndex: i, maxTokens: 4 })));
    let maxOpen = 0;
    const origNew = model.newSequence.bind(model);
    model.newSequence = (a) => {
      const seq = origNew(a);
      maxOpen = Math.max(maxOpen, model.openSequences());
      return seq;
    };
    const results = await Promise.all(gens.map((g) => s.submit(g)));
    expect(results.map((r) => r.ids.length)).toEqual([4, 4, 4]);
    expect(maxOpen).toBe(2);
    // Sequences 0 and 1 alternate; 2 starts only after one of them has finished.
    expect(model.feeds.slice(0, 8).map((f) => f.seq)).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);
    expect(model.feeds.slice(8).every((f) => f.seq === 2)).toBe(true);
  });

  it('gives the same choices alone and under concurrency (per-choice Rng and cache)', async () => {
    const model = prefixHashModel({ eosBias: -50 });
    const alone = new Generation(model, null, tok, spec({ choiceIndex: 1 }));
    while (!(await alone.step()));
    const s = new Scheduler(4);
    const crowd = [0, 1, 2, 3].map((i) => new Generation(model, null, tok, spec({ choiceIndex: i })));
    const results = await Promise.all(crowd.map((g) => s.submit(g)));
    expect(results[1]!.ids).toEqual(alone.result().ids);
    expect(results[0]!.ids).not.toEqual(results[1]!.ids); // different choice index, different stream
  });

  it('cancels an aborted job and frees its cache', async () => {
    const model = prefixHashModel({ eosBias: -50 });
    const s = new Scheduler(2);
    const ctl = new AbortController();
    // The client goes away mid-generation: after the 3rd decode step.
    const origNew = model.newSequence.bind(model);
    model.newSequence = (a) => {
      const seq = origNew(a);
      const feed = seq.feed.bind(seq);
      seq.feed = (ids) => {
        if (model.feeds.length === 3) ctl.abort(new Error('client disconnected'));
        return feed(ids);
      };
      return seq;
    };
    const p = s.submit(new Generation(model, null, tok, spec({ maxTokens: 100 })), ctl.signal);
    await expect(p).rejects.toThrow('client disconnected');
    expect(model.feeds.length).toBe(4); // the step in progress finishes, no further one starts
    expect(model.openSequences()).toBe(0);
    await s.drain();
    await expect(s.submit(new Generation(model, null, tok, spec()))).rejects.toThrow('shutting down');
  });
});
