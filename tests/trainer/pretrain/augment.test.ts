// Copy augmentation (trainer/pretrain/augment.ts, `--pretrain-augment`) over every
// example the builder makes from the shipped demo data: the augmented example is the same
// turn (action, slot names, line structure, word counts), each copied value is gone, and
// what the target copied from the prompt it still copies from the augmented prompt; the
// draws are reproducible, and stepSequence augments the share it is asked to.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadInstances } from '../../../data/load.ts';
import { buildInstance } from '../../../data/sft/build.ts';
import { trajectoryExamples } from '../../../rollout/sft-examples.ts';
import type { SftExample } from '../../../data/sft/example.ts';
import { OfflineMemory } from '../../../data/sft/memory.ts';
import { tokenizeExample } from '../../../trainer/sft/tokens.ts';
import { HashedEncoder } from '../../../encoders/hashed.ts';
import { parseTurn } from '../../../structured/turn/grammar.ts';
import type { PolicyTurn } from '../../../core/types.ts';
import { selectBackend } from '../../../model/backend.ts';
import { loadModel, type Qwen3Model } from '../../../model/index.ts';
import { augmentExample, copiedValues, valueWords } from '../../../trainer/pretrain/augment.ts';
import { stepSequence } from '../../../trainer/pretrain/data.ts';
import { qwen3Tokenizer } from '../../../core/tokenizer.ts';
import { Rng } from '../../../util/rng.ts';

const MAX_TURNS = 3;
let examples: SftExample[];
let words: string[];
let model: Qwen3Model;

beforeAll(async () => {
  const train = loadInstances(['data/demo/instances.jsonl']).filter((i) => i.split === 'train');
  const memory = await OfflineMemory.build(train, new HashedEncoder(512));
  examples = [];
  for (const inst of train)
    for (const t of await buildInstance(inst, { seed: 42, optionalRatios: [0, 1], ordersPerSubgraph: 2, maxTurns: MAX_TURNS, topK: 3, memory }))
      examples.push(...trajectoryExamples(inst, t, MAX_TURNS));
  words = valueWords(examples);
  await selectBackend('wasm', () => {});
  model = await loadModel('models/tiny-demo');
});
afterAll(() => model?.dispose());

const turn = (text: string): PolicyTurn => {
  const p = parseTurn(text);
  if (!p.ok) throw new Error(`does not parse: ${p.reason}`);
  return p.turn;
};
const prompt = (ex: SftExample) => ex.input.map((m) => m.content).join('\n');
const wordCount = (s: string) => s.split(/\s+/).filter(Boolean).length;

describe('augmentExample on the demo examples', () => {
  it('keeps the turn and its copy relations, and removes every copied value', () => {
    expect(examples.length).toBeGreaterThan(100);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: examples.length - 1 }), fc.integer({ min: 0, max: 2 ** 31 - 1 }), (i, seed) => {
        const ex = examples[i]!;
        const aug = augmentExample(ex, words, new Rng(seed));
        // every demo example has copied values (turn 1 has at least its memory results or none at all)
        if (!copiedValues(ex).length) {
          expect(aug).toBeNull();
          return;
        }
        expect(aug).not.toBeNull();
        const [a, b] = [turn(ex.target), turn(aug!.target)];
        expect(b.action).toBe(a.action);
        expect(b.state.map((s) => [s.name, s.purpose, s.status, s.source])).toEqual(a.state.map((s) => [s.name, s.purpose, s.status, s.source]));
        a.state.forEach((s, k) => {
          const t = b.state[k]!;
          expect(wordCount(t.value)).toBe(wordCount(s.value));
          // a value the target copied from the prompt is copied from the augmented prompt
          if (s.value && prompt(ex).includes(s.value)) expect(prompt(aug!)).toContain(t.value);
        });
        // the fixed parts of the prompt are untouched: the system message and every line up to TURN (before turn 2, QUERY too)
        expect(aug!.input[0]).toEqual(ex.input[0]);
        const head = (x: SftExample) => x.input[1]!.content.split('\n').slice(ex.step > 0 ? 1 : 0, 3);
        expect(head(aug!)).toEqual(head(ex));
        // every copied value of three words or more is gone (a shorter one could be drawn again by chance)
        const texts = [prompt(aug!), aug!.target].join('\n');
        for (const v of copiedValues(ex)) if (wordCount(v) >= 3) expect(texts).not.toContain(v);
      }),
      { numRuns: 300 },
    );
  });

  it('draws the same words for the same generator state, other words for another', () => {
    const ex = examples.find((e) => e.step === 2)!;
    expect(augmentExample(ex, words, new Rng(7))).toEqual(augmentExample(ex, words, new Rng(7)));
    expect(augmentExample(ex, words, new Rng(7))!.target).not.toBe(augmentExample(ex, words, new Rng(8))!.target);
  });

  it('returns null when nothing is copied or no words are given', () => {
    const ex = examples.find((e) => copiedValues(e).length > 0)!;
    expect(augmentExample(ex, [], new Rng(1))).toBeNull();
    const bare = examples.find((e) => e.step === 0 && copiedValues(e).length === 0);
    if (bare) expect(augmentExample(bare, words, new Rng(1))).toBeNull();
  });
});

describe('stepSequence', () => {
  const tok = qwen3Tokenizer();
  const data = () => {
    const sample = examples.filter((e) => copiedValues(e).length > 0).slice(0, 40); // turn 1 before any memory has nothing to copy
    return {
      train: sample.map((ex, i) => ({ ids: tokenizeExample(tok, ex, i).inputIds, start: tokenizeExample(tok, ex, i).promptLength })),
      examples: sample,
      words,
    };
  };

  it('augments about the share asked for, reproducibly, and never at 0', () => {
    const d = data();
    const o = { seed: 3, context: null, maxLen: 4096 };
    let n = 0;
    for (let step = 0; step < 400; step++) {
      const i = step % d.train.length;
      expect(stepSequence(tok, model, d, i, { ...o, augment: 0 }, step, 0)).toEqual({ seq: d.train[i], augmented: false });
      const r = stepSequence(tok, model, d, i, { ...o, augment: 0.5 }, step, 0);
      expect(stepSequence(tok, model, d, i, { ...o, augment: 0.5 }, step, 0)).toEqual(r);
      if (r.augmented) n++;
      else expect(r.seq).toBe(d.train[i]);
    }
    // Binomial(400, 0.5): mean 200, sd 10 (every demo example with a copied value augments: first describe)
    expect(n).toBeGreaterThan(160);
    expect(n).toBeLessThan(240);
    // at 1 every sequence is augmented, and its target decodes to the augmented target
    const r = stepSequence(tok, model, d, 5, { ...o, augment: 1 }, 11, 2);
    expect(r.augmented).toBe(true);
    const aug = augmentExample(
      d.examples[5]!,
      words,
      (() => {
        const g = Rng.derive(3, 'pretrain-augment', 11, 2);
        g.next();
        return g;
      })(),
    )!;
    expect(tok.decode(r.seq.ids.slice(r.seq.start))).toBe(`${aug.target}<|im_end|>`);
  }, 120_000); // 1,200 tokenized sequences: ~10 s quiet, past 30 s at load 16
});
