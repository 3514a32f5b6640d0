// gsteer's TrainingEngine on the tfjs Qwen3 + LoRA (trainer/engine/tfjs-engine.ts): Tinker's
// forward / forward_backward / optim_step / save / load semantics on a tiny random model (cpu).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, describe, expect, it } from 'vitest';
import { LoraSchema } from '../../../configs/schema.ts';
import { tokenLogprobs } from '../../../model/logprobs.ts';
import { TfjsEngine } from '../../../trainer/engine/tfjs-engine.ts';
import type { AdamParams, EngineDatum } from '../../../trainer/engine/types.ts';
import { Rng } from '../../../util/rng.ts';
import { randomQwen3, TINY_QWEN3 } from '../step-fixtures.ts';

await tf.setBackend('cpu');

const cfg = TINY_QWEN3;
const model = randomQwen3(cfg, 11);
const root = mkdtempSync(join(tmpdir(), 'gsteer-engine-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const rng = new Rng(5);
const seqs = [7, 10, 8].map((n) => Array.from({ length: n }, () => rng.int(cfg.vocabSize)));
/** A Tinker datum of a whole sequence: the input without its last token, targets without its first. */
const datum = (seq: number[], inputs: Record<string, (i: number) => number>): EngineDatum => ({
  tokens: seq.slice(0, -1),
  inputs: { target_tokens: seq.slice(1), ...Object.fromEntries(Object.entries(inputs).map(([k, f]) => [k, seq.slice(1).map((_, i) => f(i))])) },
});
const ce = seqs.map((s) => datum(s, { weights: (i) => (i >= 2 ? 0.5 + (i % 3) : 0) }));
const ppo = seqs.map((s, b) => datum(s, { logprobs: (i) => -3.9 + 0.3 * ((i + b) % 4), advantages: (i) => (i >= 2 ? [1, -0.5, 0.8][b]! : 0) }));
const ADAM: AdamParams = { learning_rate: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 0 };

/** A LoRA with a nonzero B, so every A and B gets a gradient from the first call. */
function engine(microBatchSize = 2): TfjsEngine {
  const e = TfjsEngine.create(model, LoraSchema.parse({ r: 4, alpha: 8, dropout: 0 }), 1, { baseModel: 'tiny', microBatchSize });
  const r = new Rng(2);
  for (const v of e.lora.variables())
    if (v.name.endsWith('lora_B'))
      v.assign(
        tf.tensor(
          Float32Array.from({ length: v.size }, () => r.normal() * 0.05),
          v.shape,
        ),
      );
  return e;
}
const read = (ts: tf.Tensor[] | null) => (ts ?? []).map((t) => Array.from(t.dataSync()));
const maxRel = (a: number[][], b: number[][]) => {
  let num = 0;
  let den = 0;
  a.forEach((r, i) => r.forEach((x, j) => ((num += (x - b[i]![j]!) ** 2), (den += b[i]![j]! ** 2))));
  return Math.sqrt(num / den);
};
const weights = (e: TfjsEngine) => e.lora.variables().map((v) => Array.from(v.dataSync()));

describe('TfjsEngine', () => {
  it('forward: the logprob of every target (model_input shifted by one) and -p * w, nothing accumulated', async () => {
    const e = engine();
    const r = await e.forwardBackward(ce, { lossFn: 'cross_entropy', forwardOnly: true });
    const want = tf.tidy(() =>
      tokenLogprobs(model, e.lora, { inputIds: seqs.map((s) => [...s, ...new Array<number>(10 - s.length).fill(0)]) }).logprobs.arraySync(),
    );
    let sum = 0;
    r.outputs.forEach((o, b) => {
      expect(o.logprobs).toHaveLength(seqs[b]!.length - 1);
      o.logprobs!.forEach((lp, i) => {
        expect(lp).toBeCloseTo(want[b]![i + 1]!, 5);
        expect(o.elementwise_loss![i]).toBeCloseTo(-lp * ce[b]!.inputs.weights![i]!, 5);
        sum += o.elementwise_loss![i]!;
      });
    });
    expect(r.metrics['loss:sum']).toBeCloseTo(sum, 4);
    expect(e.gradients()).toBeNull();
    e.dispose();
  });

  it('gradients accumulate across forward_backward calls: one call per datum = one call with all, any micro-batch size', async () => {
    const one = engine(3);
    await one.forwardBackward(ppo, { lossFn: 'ppo', forwardOnly: false });
    const split = engine(1);
    for (const d of ppo) await split.forwardBackward([d], { lossFn: 'ppo', forwardOnly: false });
    const [a, b] = [read(one.gradients()), read(split.gradients())];
    expect(maxRel(b, a)).toBeLessThan(1e-6);
    expect(Math.max(...a.flat().map(Math.abs))).toBeGreaterThan(1e-4);
    // optim_step clears the accumulator
    await one.optimStep(ADAM);
    expect(one.gradients()).toBeNull();
    one.dispose();
    split.dispose();
  });

  it('prefix grouping gives the same gradient; a datum whose advantages are all 0 adds none but keeps its outputs', async () => {
    const shared = seqs.map((s, b) => [...seqs[0]!.slice(0, 5), ...s.slice(5), b]); // a common 5-token prefix
    const data = shared.map((s, b) => datum(s, { logprobs: () => -3.8, advantages: (i) => (b === 2 ? 0 : i >= 4 ? 1 - b : 0) }));
    const plain = engine(3);
    const tree = engine(3);
    const r1 = await plain.forwardBackward(data, { lossFn: 'importance_sampling', forwardOnly: false });
    const r2 = await tree.forwardBackward(data, { lossFn: 'importance_sampling', forwardOnly: false, gsteer: { prefixGrouping: true } });
    expect(maxRel(read(tree.gradients()), read(plain.gradients()))).toBeLessThan(1e-5);
    const two = engine(3);
    await two.forwardBackward(data.slice(0, 2), { lossFn: 'importance_sampling', forwardOnly: false });
    expect(maxRel(read(two.gradients()), read(plain.gradients()))).toBeLessThan(1e-6);
    expect(r1.outputs[2]!.logprobs!.every((x) => x < 0)).toBe(true);
    r2.outputs[2]!.logprobs!.forEach((x, i) => expect(x).toBeCloseTo(r1.outputs[2]!.logprobs![i]!, 5));
    [plain, tree, two].forEach((e) => e.dispose());
  });

  it('gsteer scored positions: only those (and nonzero loss inputs) are scored; the outputs say which', async () => {
    const e = engine();
    const d = { ...ce[1]!, scored: ce[1]!.tokens.map((_, i) => (i === 0 ? 1 : 0)) };
    const r = await e.forwardBackward([d], { lossFn: 'cross_entropy', forwardOnly: false });
    const want = d.inputs.weights!.map((w, i) => (i === 0 || w !== 0 ? 1 : 0));
    expect(r.outputs[0]!.scored).toEqual(want);
    r.outputs[0]!.logprobs!.forEach((lp, i) => (want[i] ? expect(lp).toBeLessThan(0) : expect(lp).toBe(0)));
    e.dispose();
  });

  it('optim_step clips the global norm by grad_clip_norm (torch rule), then one AdamW step; weight decay is decoupled', async () => {
    // step 1 of AdamW with bias correction: p -= lr * g' / (|g'| + eps), g' = g * min(1, clip / (norm + 1e-6)), worked in float64
    const adam = { ...ADAM, eps: 1e-5 };
    for (const clip of [0, 1e-3]) {
      const e = engine();
      const before = weights(e);
      await e.forwardBackward(ppo, { lossFn: 'ppo', forwardOnly: false });
      const g = read(e.gradients());
      const norm = Math.sqrt(g.flat().reduce((s, x) => s + x * x, 0));
      const m = await e.optimStep({ ...adam, grad_clip_norm: clip });
      expect(m.metrics.grad_norm).toBeCloseTo(norm, 5);
      const coef = clip > 0 ? Math.min(1, clip / (norm + 1e-6)) : 1;
      if (clip > 0) expect(coef).toBeLessThan(0.5); // the clip binds
      const want = g.map((r) => r.map((x) => (-adam.learning_rate * coef * x) / (Math.abs(coef * x) + adam.eps)));
      const got = weights(e).map((w, i) => w.map((x, j) => x - before[i]![j]!));
      expect(maxRel(got, want)).toBeLessThan(1e-3);
      e.dispose();
    }
    // no forward_backward: a zero gradient, so only the decay p * (1 - lr * wd) moves the weights
    const e = engine();
    const before = weights(e);
    await e.optimStep({ ...ADAM, weight_decay: 0.5 });
    weights(e).forEach((w, i) => w.forEach((x, j) => expect(x).toBeCloseTo(before[i]![j]! * (1 - 1e-2 * 0.5), 7)));
    e.dispose();
  });

  it('save -> load (with optimizer) -> save is byte-exact, and one more step equals the uninterrupted run', async () => {
    const a = engine();
    await a.forwardBackward(ppo, { lossFn: 'ppo', forwardOnly: false });
    await a.optimStep(ADAM);
    const d1 = join(root, 'state-1');
    const d2 = join(root, 'state-2');
    await a.save(d1, { optimizer: true });
    const b = engine();
    await b.load(d1, { optimizer: true });
    await b.save(d2, { optimizer: true });
    expect(readdirSync(d2).sort()).toEqual(readdirSync(d1).sort());
    for (const f of readdirSync(d1)) expect(readFileSync(join(d2, f)).equals(readFileSync(join(d1, f))), f).toBe(true);
    for (const e of [a, b]) {
      await e.forwardBackward(ce, { lossFn: 'cross_entropy', forwardOnly: false });
      await e.optimStep(ADAM);
    }
    expect(weights(b)).toEqual(weights(a));
    // without the optimizer the moments start over: a different second step
    const c = engine();
    await c.load(d1, { optimizer: false });
    await c.forwardBackward(ce, { lossFn: 'cross_entropy', forwardOnly: false });
    await c.optimStep(ADAM);
    expect(weights(c)).not.toEqual(weights(a));
    // an adapter folder has no optimizer state
    const d3 = join(root, 'weights-only');
    await c.save(d3, { optimizer: false });
    await expect(c.load(d3, { optimizer: true })).rejects.toThrow(/no optimizer.json; this state was saved without the optimizer/);
    [a, b, c].forEach((e) => e.dispose());
  });

  it('refuses datums it cannot score, naming the datum, the field and the fix', async () => {
    const e = engine();
    const shifted = { ...ce[0]!, inputs: { ...ce[0]!.inputs, target_tokens: ce[0]!.tokens } };
    await expect(e.forwardBackward([ce[1]!, shifted], { lossFn: 'cross_entropy', forwardOnly: false })).rejects.toThrow(
      /datum 1: target_tokens\[0\] is \d+ but model_input\[1\] is \d+; gsteer's engine scores next-token targets only/,
    );
    await expect(e.forwardBackward([ce[0]!], { lossFn: 'ppo', forwardOnly: false })).rejects.toThrow(
      /datum 0: loss_fn_inputs.logprobs is missing; ppo reads target_tokens, logprobs, advantages/,
    );
    const short = { ...ppo[0]!, inputs: { ...ppo[0]!.inputs, advantages: [1] } };
    await expect(e.forwardBackward([short], { lossFn: 'ppo', forwardOnly: false })).rejects.toThrow(
      /datum 0: loss_fn_inputs.advantages has 1 entries but model_input has 6 tokens/,
    );
    await expect(e.forwardBackward(ce, { lossFn: 'cross_entropy', forwardOnly: false, gsteer: { reference: true } })).rejects.toThrow(
      /reference scoring is forward-only/,
    );
    e.dispose();
  });
});
