// LoRA training throughput of the tfjs trainer, per backend and model shape.
//
//   node --import tsx bench/trainer/lora.ts [--seq 128] [--layers-06b 2] [--reps 3] [--backends wasm,cpu]
//                                           [--big-backends wasm]
//
// For each model shape and each installed backend: forward+backward tokens/s of one GRPO
// micro-batch (1 sequence of --seq tokens, LoRA r 8 on all 7 projections, dropout 0.05,
// trainer/step.ts accumulateGradients) and forward-only tokens/s, next to a numpy float32
// forward of the same shapes (bench/trainer/numpy_forward.py) measured in the same run.
// There is no PyTorch on this machine, so the baseline is a forward only; the fwd+bwd
// ratio compares a training step against a numpy *forward* and flatters numpy by ~3x.
// Weights are random (values do not change the speed). The Qwen3-0.6B shape (full 151,936
// vocabulary, fewer layers) runs once, without warm-up, and only on --big-backends: the
// pure-JS cpu backend is ~10x slower than wasm (NOTES.md) and would take tens of minutes
// on a 2-core machine. Not part of `npm test`.
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../trainer/backend.ts';
import type { Qwen3Config } from '../../trainer/model/config.ts';
import { makeModel, type Qwen3Model } from '../../trainer/model/model.ts';
import { tokenLogprobs } from '../../trainer/model/logprobs.ts';
import { projShape } from '../../trainer/model/weights.ts';
import { createLora } from '../../trainer/lora/lora.ts';
import { PROJ_NAMES, type ProjName } from '../../trainer/lora/types.ts';
import { loraPolicy } from '../../trainer/policy-lora.ts';
import { accumulateGradients } from '../../trainer/step.ts';
import { LoraSchema } from '../../configs/schema.ts';
import { PRESETS } from '../../trainer/model/init.ts';

const { values } = parseArgs({
  options: {
    seq: { type: 'string', default: '128' },
    'layers-06b': { type: 'string', default: '2' },
    reps: { type: 'string', default: '3' },
    backends: { type: 'string', default: 'wasm,cpu' },
    'big-backends': { type: 'string', default: 'wasm' },
  },
});
const T = Number(values.seq);
const REPS = Number(values.reps);
const L06 = Number(values['layers-06b']);

/** Qwen3-0.6B's config.json shapes, with fewer layers (say how many in the output). */
const QWEN3_06B: Qwen3Config = {
  vocabSize: 151936, hiddenSize: 1024, intermediateSize: 3072, numHiddenLayers: L06, numAttentionHeads: 16, numKeyValueHeads: 8,
  headDim: 128, rmsNormEps: 1e-6, ropeTheta: 1_000_000, tieWordEmbeddings: true, maxPositionEmbeddings: 40960,
};
const tiny = PRESETS.tiny!;
const SHAPES: { name: string; cfg: Qwen3Config }[] = [
  { name: 'tiny (V 151,936)', cfg: tiny },
  { name: 'tiny, trimmed V 4,096', cfg: { ...tiny, vocabSize: 4096 } },
  { name: `Qwen3-0.6B shape, ${L06}/28 layers`, cfg: QWEN3_06B },
];

/** Cheap deterministic fill in [-0.03, 0.03) (xorshift32): speed does not depend on values. */
function fill(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 4294967296 - 0.5) * 0.06;
  }
  return out;
}

function randomModel(cfg: Qwen3Config): Qwen3Model {
  let seed = 1;
  const mat = (s: [number, number]) => tf.tensor2d(fill(s[0] * s[1], seed++), s);
  const ones = (n: number) => tf.ones([n]) as tf.Tensor1D;
  const layers = Array.from({ length: cfg.numHiddenLayers }, () => ({
    inputNorm: ones(cfg.hiddenSize), postNorm: ones(cfg.hiddenSize), qNorm: ones(cfg.headDim), kNorm: ones(cfg.headDim),
    proj: Object.fromEntries(PROJ_NAMES.map((m) => [m, mat(projShape(cfg, m))])) as Record<ProjName, tf.Tensor2D>,
  }));
  const embed = mat([cfg.vocabSize, cfg.hiddenSize]);
  return makeModel('(bench)', cfg, { embed, layers, norm: ones(cfg.hiddenSize), lmHead: embed }, null);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function timeIt(f: () => void, reps: number): number {
  if (reps > 1) f(); // warm-up (kernel setup, first allocations)
  const secs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    secs.push((performance.now() - t0) / 1000);
  }
  return median(secs);
}

function measure(cfg: Qwen3Config, reps: number): { fwdBwd: number; fwd: number } {
  const model = randomModel(cfg);
  const adapter = createLora(model, LoraSchema.parse({}), 7);
  const ids = [Array.from({ length: T }, (_, t) => (t * 7919) % cfg.vocabSize)];
  const batch = { kind: 'grpo' as const, inputIds: ids, completionMask: [ids[0]!.map((_, t) => (t >= T / 2 ? 1 : 0))], advantages: [1] };
  const policy = loraPolicy(model, adapter);
  const grpo = { lossType: 'grpo' as const, epsilon: 0.2, betaKl: 0, tisCap: null };
  const fwdBwd = timeIt(() => tf.dispose(accumulateGradients(policy, batch, { microBatchSize: 1, grpo, dropoutSeed: 1 }).grads), reps);
  const fwd = timeIt(() => tf.tidy(() => void tokenLogprobs(model, adapter, { inputIds: ids }).logprobs.dataSync()), reps);
  adapter.dispose();
  model.dispose();
  return { fwdBwd: T / fwdBwd, fwd: T / fwd };
}

function numpyForward(cfg: Qwen3Config, reps: number): number {
  const arg = JSON.stringify({ D: cfg.hiddenSize, F: cfg.intermediateSize, L: cfg.numHiddenLayers, H: cfg.numAttentionHeads, KV: cfg.numKeyValueHeads, hd: cfg.headDim, V: cfg.vocabSize, r: 8, T, reps });
  const out = execFileSync('python3', [new URL('./numpy_forward.py', import.meta.url).pathname, arg], { encoding: 'utf8' });
  return (JSON.parse(out) as { tokens_per_s: number }).tokens_per_s;
}

const rows: string[][] = [];
const baseline = new Map<string, number>();
for (const s of SHAPES) {
  const reps = s.cfg.hiddenSize >= 1024 ? 1 : REPS;
  baseline.set(s.name, numpyForward(s.cfg, reps));
  console.error(`numpy forward ${s.name}: ${baseline.get(s.name)!.toFixed(1)} tok/s`);
}
for (const backend of values.backends!.split(',')) {
  try {
    await selectBackend(backend as 'wasm' | 'cpu' | 'node' | 'gpu', () => {});
  } catch (e) {
    console.error(`skip backend ${backend}: ${(e as Error).message}`);
    continue;
  }
  for (const s of SHAPES) {
    const big = s.cfg.hiddenSize >= 1024;
    if (big && !values['big-backends']!.split(',').includes(backend)) {
      rows.push([s.name, backend, 'skipped', 'skipped', baseline.get(s.name)!.toFixed(1), '-', '-']);
      continue;
    }
    const reps = big ? 1 : REPS;
    const r = measure(s.cfg, reps);
    const np = baseline.get(s.name)!;
    console.error(`${backend} ${s.name}: fwd+bwd ${r.fwdBwd.toFixed(1)} tok/s, fwd ${r.fwd.toFixed(1)} tok/s`);
    rows.push([s.name, tf.getBackend(), r.fwdBwd.toFixed(1), r.fwd.toFixed(1), np.toFixed(1), (r.fwdBwd / np).toFixed(2), (r.fwd / np).toFixed(2)]);
  }
}

const header = ['model', 'backend', 'fwd+bwd tok/s', 'fwd tok/s', 'numpy fwd tok/s', 'fwd+bwd / numpy', 'fwd / numpy'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
console.log(`LoRA r 8 on q,k,v,o,gate,up,down; 1 sequence x ${T} tokens; median of ${REPS} (1 for the 0.6B shape)`);
console.log(line(header));
console.log(`| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`);
rows.forEach((r) => console.log(line(r)));
