// `gsteer model init --pretrain` (trainer/pretrain/): the hand-written cross-entropy
// gradient against softmax - onehot worked in plain JS, the target loss falls when the base
// weights train, and the written checkpoint reloads with the trained model's logprobs.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modelWorkspace, SMALL_CFG } from '../../model/fixtures.ts';
import { sha256File } from '../../../util/atomic.ts';
import { run } from '../../../cli/commands/model.ts';
import { baseKeptIds, initModel } from '../../../model/init.ts';
import { loadModel, tokenLogprobs, type Qwen3Model } from '../../../model/index.ts';
import type { SftExample } from '../../../data/sft/example.ts';
import { heldOutMask } from '../../../trainer/sft/tokens.ts';
import { makeBatch, pretrainSequences, type SequenceOptions } from '../../../trainer/pretrain/data.ts';
import { pretrainLoss, rowCrossEntropy } from '../../../trainer/pretrain/loss.ts';
import { pretrainModel } from '../../../trainer/pretrain/pretrain.ts';
import { PRETRAIN_DEFAULTS, pretrainOptions } from '../../../trainer/pretrain/cli.ts';
import { qwen3Tokenizer } from '../../../core/tokenizer.ts';

const { path } = modelWorkspace('gsteer-pretrain-');

describe('rowCrossEntropy', () => {
  it('value = lse - logit[target] and gradient = dy * (softmax - onehot), as computed in plain JS', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 2, max: 7 }), fc.integer({ min: 0, max: 1e6 }), (N, V, seed) => {
        let s = seed;
        const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648) * 6 - 3;
        const x = Array.from({ length: N }, () => Array.from({ length: V }, rnd));
        const t = Int32Array.from({ length: N }, (_, n) => (seed + n) % V);
        const dy = Array.from({ length: N }, rnd);
        const xv = tf.tensor2d(x);
        const { value, grads } = tf.tidy(() => {
          const f = (a: tf.Tensor) => tf.sum(tf.mul(rowCrossEntropy(a as tf.Tensor2D, t), tf.tensor1d(dy))) as tf.Scalar;
          return { value: rowCrossEntropy(xv, t).arraySync(), grads: tf.grad(f)(xv).arraySync() as number[][] };
        });
        xv.dispose();
        x.forEach((row, n) => {
          const lse = Math.log(row.reduce((a, v) => a + Math.exp(v), 0));
          expect(value[n]).toBeCloseTo(lse - row[t[n]!]!, 4);
          row.forEach((v, k) => expect(grads[n]![k]).toBeCloseTo(dy[n]! * (Math.exp(v - lse) - (k === t[n] ? 1 : 0)), 4));
        });
      }),
      { numRuns: 20 },
    );
  });
});

const CFG = SMALL_CFG;
const TARGETS = [
  'STATE:\n- budget | purpose: Money | status: uncovered | source: memory | value:\nPLAN: check memory\nACTION: RETRIEVE\nEXECUTE: Money',
  'STATE:\n- budget | purpose: Money | status: covered | source: memory | value: 900\nPLAN: done\nACTION: STOP\nEXECUTE: Trip for 900',
  'STATE:\n- party | purpose: Who | status: uncovered | source: dialogue | value:\nPLAN: ask\nACTION: ASK\nEXECUTE: Who travels?',
];
const example = (target: string, i: number): SftExample => ({
  instanceId: `i${i}`,
  userId: 'u',
  trajectoryId: `i${i}/s0/o0/dialogue`,
  kind: 'dialogue',
  step: 0,
  steps: 1,
  action: 'RETRIEVE',
  input: [
    { role: 'system', content: 'Answer in the turn format.' },
    { role: 'user', content: `QUERY: trip ${i}` },
  ],
  target,
});
const SEQ: SequenceOptions = { context: 8, maxLen: 512, splitSeed: 1, heldOutFraction: 0 };

function meanLoss(model: Qwen3Model, file: string): number {
  const { train } = pretrainSequences(qwen3Tokenizer(), file, SEQ);
  return tf.tidy(() => pretrainLoss(model, makeBatch(model, train)).dataSync()[0] as number);
}

describe('pretrainLoss', () => {
  it('is the mean target-token negative logprob of tokenLogprobs, with the head run on target positions only', () => {
    const tok = qwen3Tokenizer();
    const dir = path('loss-ref');
    initModel(dir, CFG, { seed: 9, keptIds: [...baseKeptIds(), ...TARGETS.flatMap((t) => tok.encode(t))] });
    return loadModel(dir).then((model) => {
      // three right-padded sequences whose targets start at different positions (from = 2 - 1)
      const seqs = TARGETS.map((t, i) => ({ ids: tok.encode(t), start: 2 + 3 * i }));
      const b = makeBatch(model, seqs);
      expect(b.from).toBe(1);
      const loss = tf.tidy(() => pretrainLoss(model, b).dataSync()[0] as number);
      // reference: per-sequence logprobs (column t = log p(ids[t] | ids[<t])), averaged over every target token of the batch
      let sum = 0;
      let n = 0;
      for (const s of seqs) {
        const lp = tf.tidy(() => tokenLogprobs(model, null, { inputIds: [s.ids] }).logprobs.arraySync()[0]!);
        for (let t = s.start; t < s.ids.length; t++) (sum -= lp[t]!), n++;
      }
      expect(loss).toBeCloseTo(sum / n, 4);
      model.dispose();
    });
  });
});

describe('pretrainSequences with extra examples', () => {
  it('adds the extra steps whose prompt the main file lacks, once: held-out prompts stay unseen, the main targets stand', () => {
    const tok = qwen3Tokenizer();
    // 12 main steps, 12 trajectories; half held out by the main split (seed 1)
    const main = Array.from({ length: 12 }, (_, i) => example(TARGETS[i % 3]!, i));
    const held = heldOutMask(main, 1, 0.5);
    const heldIdx = held.flatMap((h, i) => (h ? [i] : []));
    const trainIdx = held.flatMap((h, i) => (h ? [] : [i]));
    expect(heldIdx.length).toBeGreaterThan(0); // the case this test is about exists for this seed
    expect(trainIdx.length).toBeGreaterThan(0);
    const other = (i: number) => ({ ...main[i]!, trajectoryId: `x${i}/s0/o1/dialogue` });
    const extra = [
      ...heldIdx.map((i) => ({ ...other(i), target: TARGETS[(i + 1) % 3]! })), // a held-out prompt, another target: left out
      ...trainIdx.map(other), // the same step as a trained one (prompt and target): left out
      { ...other(trainIdx[0]!), target: TARGETS[2]! }, // a trained prompt with another target: left out, the main target stands
      example(TARGETS[0]!, 100),
      example(TARGETS[1]!, 101), // new prompts: added
      example(TARGETS[1]!, 101), // a repeat inside the extra file: added once
    ];
    const file = path('main.jsonl');
    const more = path('extra.jsonl');
    writeFileSync(file, main.map((e) => JSON.stringify(e)).join('\n'));
    writeFileSync(more, extra.map((e) => JSON.stringify(e)).join('\n'));
    const o = { ...SEQ, heldOutFraction: 0.5 };
    const alone = pretrainSequences(tok, file, o);
    const r = pretrainSequences(tok, file, { ...o, extra: more });
    expect([alone.train.length, alone.heldOut]).toEqual([trainIdx.length, heldIdx.length]);
    expect([r.extraAdded, r.extraHeldOut, r.extraInMain, r.extraRepeated]).toEqual([2, heldIdx.length, trainIdx.length + 1, 1]);
    expect(r.train.length).toBe(trainIdx.length + 2);
    // no trained example has a held-out prompt
    const heldPrompts = new Set(heldIdx.map((i) => JSON.stringify(main[i]!.input)));
    expect(r.examples.filter((e) => heldPrompts.has(JSON.stringify(e.input)))).toEqual([]);
    // one target per prompt, the main file's where it has the prompt
    const byPrompt = new Map<string, Set<string>>();
    for (const e of r.examples) byPrompt.set(JSON.stringify(e.input), (byPrompt.get(JSON.stringify(e.input)) ?? new Set()).add(e.target));
    expect([...byPrompt.values()].every((t) => t.size === 1)).toBe(true);
    expect(r.examples.map((e) => (e as { instanceId?: string }).instanceId).slice(-2)).toEqual(['i100', 'i101']);
  });
});

describe('pretrainModel', () => {
  it('lowers the target loss, and the checkpoint it writes reloads with the same logprobs', async () => {
    const tok = qwen3Tokenizer();
    const file = path('examples.jsonl');
    writeFileSync(file, TARGETS.map((t, i) => JSON.stringify(example(t, i))).join('\n'));
    const kept = [
      ...baseKeptIds(),
      ...TARGETS.flatMap((t) => tok.encode(t)),
      ...tok.encode('<|im_start|>system\nuser\nassistant\n<think>\n\n</think>\n\nAnswer in the turn format.QUERY: trip 0 1 2'),
    ];
    const dir = path('m');
    initModel(dir, CFG, { seed: 3, keptIds: kept });
    const before = await loadModel(dir);
    const lossBefore = meanLoss(before, file);
    before.dispose();

    const probe = [tok.encode(TARGETS[0]!)];
    let inMemory: number[] = [];
    const r = await pretrainModel(dir, file, tok, {
      ...SEQ,
      seed: 5,
      steps: 40,
      seconds: 60,
      batchSize: 3,
      lr: 1e-2,
      warmup: 4,
      weightDecay: 0,
      maxGradNorm: 1,
      augment: 0,
      progress: false,
      log: () => {},
      onTrained: (m) => void (inMemory = tf.tidy(() => tokenLogprobs(m, null, { inputIds: probe }).logprobs.arraySync()[0]!)),
    });
    expect(r.steps).toBe(40);
    const after = await loadModel(dir);
    const lossAfter = meanLoss(after, file);
    // uniform over the kept rows is ln(rows); 40 full-weight updates on 3 sequences must fall far below it
    expect(lossBefore).toBeGreaterThan(0.9 * Math.log(after.rows));
    expect(lossAfter).toBeLessThan(0.5 * lossBefore);
    const reloaded = tf.tidy(() => tokenLogprobs(after, null, { inputIds: probe }).logprobs.arraySync()[0]!);
    reloaded.forEach((v, i) => expect(v).toBeCloseTo(inMemory[i]!, 5));
    expect(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).tie_word_embeddings).toBe(false);
    after.dispose();
  }, 30_000);

  it('refuses a tied model (its head cannot train while the embedding stays frozen)', async () => {
    const dir = path('tied');
    initModel(dir, { ...CFG, tieWordEmbeddings: true }, { seed: 3, keptIds: baseKeptIds() });
    await expect(
      pretrainModel(dir, path('examples.jsonl'), qwen3Tokenizer(), {
        ...SEQ,
        seed: 5,
        steps: 1,
        seconds: 1,
        batchSize: 1,
        lr: 1e-2,
        warmup: 0,
        weightDecay: 0,
        maxGradNorm: 1,
        augment: 0,
        progress: false,
        log: () => {},
      }),
    ).rejects.toThrow(/tie_word_embeddings: false/);
  });
});

describe('model init --pretrain flags', () => {
  it('parses the options and names a bad flag, its value and the rule', () => {
    const o = pretrainOptions({ pretrain: 'x.jsonl', 'pretrain-steps': '7', 'pretrain-context': '16', 'pretrain-lr': '0.003' }, 9);
    expect(o).toMatchObject({ steps: 7, context: 16, lr: 0.003, seed: 9, splitSeed: 9, batchSize: PRETRAIN_DEFAULTS.batch });
    expect(pretrainOptions({ 'pretrain-context': 'full' }, 0).context).toBeNull();
    expect(() => pretrainOptions({ 'pretrain-steps': '2.5' }, 0)).toThrow(/--pretrain-steps 2\.5 must be a positive integer/);
    expect(() => pretrainOptions({ 'pretrain-held-out': '1' }, 0)).toThrow(/--pretrain-held-out 1 must be a fraction in \[0, 1\)/);
    expect(() => pretrainOptions({ 'pretrain-context': 'all' }, 0)).toThrow(/--pretrain-context all must be a positive integer or "full"/);
    expect(pretrainOptions({}, 0).augment).toBe(0);
    expect(pretrainOptions({ 'pretrain-augment': '0.5' }, 0).augment).toBe(0.5);
    expect(() => pretrainOptions({ 'pretrain-augment': '1.5' }, 0)).toThrow(/--pretrain-augment 1\.5 must be a fraction in \[0, 1\]/);
    expect(pretrainOptions({ 'pretrain-split-seed': '42' }, 7)).toMatchObject({ seed: 7, splitSeed: 42 });
    expect(() => pretrainOptions({ 'pretrain-split-seed': 'x' }, 0)).toThrow(/--pretrain-split-seed x must be an integer/);
    expect([pretrainOptions({}, 0).extra, pretrainOptions({ 'pretrain-extra': 'more.jsonl' }, 0).extra]).toEqual([null, 'more.jsonl']);
  });
});

describe('gsteer model init --pretrain', () => {
  it('writes an untied tiny model whose weights moved from the init, and records what it did', async () => {
    const file = path('cli-examples.jsonl');
    writeFileSync(file, TARGETS.map((t, i) => JSON.stringify(example(t, i))).join('\n'));
    const common = ['--preset', 'tiny', '--seed', '4', '--vocab-from', file];
    const plain = path('cli-plain');
    const trained = path('cli-trained');
    expect(await run(['init', ...common, '--out', plain])).toBe(0);
    expect(await run(['init', ...common, '--out', trained, '--pretrain', file, '--pretrain-steps', '3', '--pretrain-context', '16', '--backend', 'wasm'])).toBe(
      0,
    );
    const report = JSON.parse(readFileSync(join(trained, 'pretrain.json'), 'utf8'));
    expect(report).toMatchObject({ steps: 3, sequences: 3, context: 16, examples: file, examplesSha256: sha256File(file), backend: 'wasm' });
    // The recipe is reproducible: the same command (a step cap, not a time cap) writes the same bytes.
    const again = path('cli-trained-again');
    expect(await run(['init', ...common, '--out', again, '--pretrain', file, '--pretrain-steps', '3', '--pretrain-context', '16', '--backend', 'wasm'])).toBe(
      0,
    );
    expect(readFileSync(join(again, 'model.safetensors')).equals(readFileSync(join(trained, 'model.safetensors')))).toBe(true);
    // A second stage (gsteer model pretrain) trains on and keeps the first stage's record.
    expect(
      await run(['pretrain', '--model', again, '--seed', '4', '--pretrain', file, '--pretrain-steps', '2', '--pretrain-context', '16', '--backend', 'wasm']),
    ).toBe(0);
    const staged = JSON.parse(readFileSync(join(again, 'pretrain.json'), 'utf8'));
    expect(staged).toMatchObject({ steps: 2, previous: [{ steps: 3, examplesSha256: sha256File(file) }] });
    expect(readFileSync(join(again, 'model.safetensors')).equals(readFileSync(join(trained, 'model.safetensors')))).toBe(false);
    const a = await loadModel(plain);
    const b = await loadModel(trained);
    expect(a.config.tieWordEmbeddings).toBe(true);
    expect(b.config.tieWordEmbeddings).toBe(false);
    // same seed, same embedding (it stays frozen); the first layer's q_proj trained
    expect(tf.tidy(() => tf.max(tf.abs(tf.sub(a.weights.embed, b.weights.embed))).dataSync()[0])).toBe(0);
    expect(tf.tidy(() => tf.max(tf.abs(tf.sub(a.weights.layers[0]!.projT.q_proj, b.weights.layers[0]!.projT.q_proj))).dataSync()[0])).toBeGreaterThan(1e-4);
    a.dispose();
    b.dispose();
  }, 60_000);
});
