// Base pretraining step time (`gsteer model init --pretrain`, trainer/pretrain/loss.ts):
// the loss with lm_head run on the target positions only (what pretrainLoss does) against
// the same loss with the head run on every position (the baseline, `from: 0`: prompt rows
// have weight 0), measured in the same run on the same sequences, plus the two parts of a
// step: the decoder stack alone (forward+backward) and the forward alone.
//
//   node --import tsx bench/trainer/pretrain-head.ts [--model models/tiny-demo] [--examples F] [--n 30] [--backend wasm]
//
// --examples: SFT examples (gsteer sft build; default: built here from data/demo with
// configs/sft-demo.yaml, as the demo does). Not part of `npm test`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { run as sftRun } from '../../cli/commands/sft.ts';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import { loadModel, type Qwen3Model } from '../../model/index.ts';
import { makeBatch, pretrainSequences } from '../../trainer/pretrain/data.ts';
import { pretrainLoss, type PretrainBatch } from '../../trainer/pretrain/loss.ts';
import { trainable } from '../../trainer/pretrain/pretrain.ts';
import { runStack } from '../../model/stack.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/tiny-demo' },
    examples: { type: 'string' },
    n: { type: 'string', default: '30' },
    backend: { type: 'string', default: 'wasm' },
  },
});

async function main(): Promise<void> {
  await selectBackend(values.backend as BackendKind, () => {});
  const tmp = mkdtempSync(join(tmpdir(), 'gsteer-bench-'));
  let examples = values.examples;
  if (!examples) {
    examples = join(tmp, 'examples.jsonl');
    const code = await sftRun([
      'build',
      '--data',
      'data/demo/instances.jsonl',
      '--out',
      examples,
      '--config',
      'configs/demo.yaml',
      '--config',
      'configs/sft-demo.yaml',
    ]);
    if (code !== 0) throw new Error('sft build failed');
  }
  const base = await loadModel(values.model!);
  const { weights, vars } = trainable(base.weights); // what pretraining trains: all but the embedding
  const model: Qwen3Model = { ...base, weights };
  const { train } = pretrainSequences(qwen3Tokenizer(), examples, { context: null, maxLen: 1024, splitSeed: 42, heldOutFraction: 0.2 });
  const batches = train.slice(0, Number(values.n)).map((s) => makeBatch(model, [s]));
  const tokens = batches.reduce((a, b) => a + b.T, 0);
  const targets = train.slice(0, batches.length).reduce((a, s) => a + s.ids.length - s.start, 0);

  const time = (f: (b: PretrainBatch) => tf.Scalar, grad: boolean): number => {
    const t0 = performance.now();
    for (const b of batches) {
      if (grad) {
        const { value, grads } = tf.variableGrads(() => f(b), vars);
        value.dataSync();
        tf.dispose([value, ...Object.values(grads)]);
      } else tf.tidy(() => f(b).dataSync());
    }
    return (performance.now() - t0) / batches.length;
  };
  const stack = (b: PretrainBatch) => tf.sum(runStack(model, null, tf.tensor2d(b.rows, [b.B, b.T], 'int32'), {})) as tf.Scalar;
  time((b) => pretrainLoss(model, b), true); // warm-up (kernels, allocations)
  const rows = [
    { what: 'step, head on every position (baseline)', ms: time((b) => pretrainLoss(model, { ...b, from: 0 }), true) },
    { what: 'step, head on target positions (pretrainLoss)', ms: time((b) => pretrainLoss(model, b), true) },
    { what: 'decoder stack alone, forward+backward', ms: time(stack, true) },
    { what: 'forward alone (head on target positions)', ms: time((b) => pretrainLoss(model, b), false) },
  ];
  const baseMs = rows[0]!.ms;
  console.log(
    `backend ${tf.getBackend()}, ${values.model}, ${batches.length} sequences of batch 1: ${(tokens / batches.length).toFixed(0)} tokens, ${(targets / batches.length).toFixed(0)} target tokens each on average\n`,
  );
  console.log('| measured | ms per sequence | tokens/s | speed vs baseline |');
  console.log('|---|---|---|---|');
  for (const r of rows)
    console.log(`| ${r.what} | ${r.ms.toFixed(0)} | ${((1000 * tokens) / batches.length / r.ms).toFixed(0)} | ${(baseMs / r.ms).toFixed(2)}x |`);
  tf.dispose(vars);
  base.dispose();
  rmSync(tmp, { recursive: true, force: true });
}

void main();
