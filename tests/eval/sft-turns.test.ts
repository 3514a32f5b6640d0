// `gsteer sft eval` machinery: the sample is held-out only and fixed by the seed; a turn
// cut at rollout.maxTokens counts as invalid ('truncated'), as it does in a rollout.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { rmSync } from 'node:fs';
import { evalSample, evalValidTurns, invalidReason } from '../../eval/sft-turns.ts';
import { heldOutMask, isHeldOut, readSftExamples } from '../../trainer/sft/tokens.ts';
import { makeMicro } from '../sft/micro.ts';

let m: ReturnType<typeof makeMicro>;
beforeAll(() => {
  m = makeMicro('gsteer-sft-eval-');
});
afterAll(() => rmSync(m.root, { recursive: true, force: true }));

describe('invalidReason', () => {
  const turn =
    'STATE:\n- budget | purpose: trip budget | status: covered | source: dialogue | value: $3,000\nPLAN: ask next\nACTION: ASK\nEXECUTE: When do you travel?';
  it('a canonical turn that ended with <|im_end|> is valid; the same text cut at maxTokens is not', () => {
    expect(invalidReason(turn, 'stop')).toBeNull();
    expect(invalidReason(turn, 'length')).toBe('truncated');
    expect(invalidReason(`${turn}\nmore`, 'stop')).toBe('trailing_text');
    expect(invalidReason('', 'stop')).toBe('empty');
  });
});

describe('sft eval', () => {
  it('samples only held-out examples, the same ones for the same seed', () => {
    const all = readSftExamples(m.examples);
    const o = { n: 3, seed: 9, splitSeed: 5, heldOutFraction: 0.5 };
    const s = evalSample(all, o);
    const mask = heldOutMask(all, 5, 0.5);
    expect(s.length).toBe(Math.min(3, mask.filter(Boolean).length));
    for (const e of s) expect(mask[all.indexOf(e)]).toBe(true);
    for (const e of s) expect(isHeldOut(5, e.trajectoryId, 0.5)).toBe(true);
    expect(evalSample(all, o)).toEqual(s);
    expect(() => evalSample(all, { ...o, heldOutFraction: 0 })).toThrow(/held-out/);
  });

  it('N above the held-out count goes round the same order again: every prompt equally often', () => {
    const all = readSftExamples(m.examples);
    const o = { seed: 9, splitSeed: 5, heldOutFraction: 0.5 };
    const h = heldOutMask(all, 5, 0.5).filter(Boolean).length;
    const once = evalSample(all, { ...o, n: h });
    const thrice = evalSample(all, { ...o, n: 3 * h + 1 });
    expect(new Set(once).size).toBe(h); // without replacement up to h
    expect(thrice.length).toBe(3 * h + 1);
    // the first h are the n <= h sample, then the same order again, then its first element
    expect(thrice).toEqual([...once, ...once, ...once, once[0]]);
    // smaller N is a prefix, so the demo's seeded sample does not move when N grows
    expect(evalSample(all, { ...o, n: 2 })).toEqual(once.slice(0, 2));
  });

  it('a random policy cut at maxTokens is counted as truncated, never valid', async () => {
    const r = await evalValidTurns({
      model: m.modelDir,
      adapter: null,
      examples: m.examples,
      n: 2,
      seed: 1,
      splitSeed: 5,
      heldOutFraction: 0.5,
      temperature: 1,
      topP: 1,
      maxTokens: 6,
      backend: 'cpu',
      progress: false,
    });
    expect(r.n).toBe(2);
    // A 6-token completion cannot hold STATE/PLAN/ACTION/EXECUTE: it is invalid either way.
    expect(r.valid).toBe(0);
    expect(Object.values(r.reasons).reduce((a, b) => a + b, 0)).toBe(2);
    expect(r.samples.every((s) => !s.ok)).toBe(true);
  });
});
