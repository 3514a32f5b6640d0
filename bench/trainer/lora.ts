// LoRA fwd+bwd throughput of the tfjs trainer step before and after issue 17, in one run:
//
//   node --import tsx bench/trainer/lora.ts [--backend wasm] [--reps 3] [--torch auto|off]
//        [--tiny B,T,S] [--big B,T,S] [--layers-06b 2] [--only tiny|big]
//
// B sequences of T tokens per micro-batch, the last S of each the completion (loss tokens);
// LoRA r 8 on all 7 projections, dropout 0.05, trainer/step.ts accumulateGradients. Rows:
//   before        full-path.ts: lm_head over all T-1 positions, every row backpropagated
//   after         lm_head over the S loss tokens only
//   before/after, half A=0   every other row has advantage 0 (skipped backward after)
//   after, constrained       every row grammar-masked (token masks, model/logprobs.ts maskPath auto), vs `after`
// Ratios are against `before` of the same shape, measured in the same process. GFLOP/s
// counts matmul FLOPs (flops.ts) against the wasm fp32 peak measured here with a large
// matmul, and the theoretical CPU peak from lscpu. PyTorch CPU (bench/trainer/torch_lora.py,
// /usr/bin/python3, Debian python3-torch) runs the same shapes, head over all positions and
// over the loss tokens. Random weights (values do not change the speed). Not part of npm test.
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import type { Qwen3Config } from '../../model/config.ts';
import type { TokenMasks } from '../../model/token-masks.ts';
import { createLora } from '../../model/lora/lora.ts';
import { loraPolicy } from '../../trainer/policy-lora.ts';
import { accumulateGradients, type PolicyBatch } from '../../trainer/step.ts';
import { fullPathGradients } from './full-path.ts';
import { LoraSchema } from '../../configs/schema.ts';
import { PRESETS } from '../../model/init.ts';
import { randomModel } from './random-model.ts';
import { seqFlops } from './flops.ts';
import { cpuPeak, matmulPeak } from './peak.ts';

const { values } = parseArgs({
  options: {
    backend: { type: 'string', default: 'wasm' },
    reps: { type: 'string', default: '3' },
    torch: { type: 'string', default: 'auto' },
    tiny: { type: 'string', default: '4,256,64' },
    big: { type: 'string', default: '2,128,32' },
    'layers-06b': { type: 'string', default: '2' },
    // one shape per process: the wasm heap never shrinks, so the old path's [B*T, V] logits
    // of one shape can leave too little of the 4 GiB address space for the next
    only: { type: 'string', default: 'tiny,big' },
  },
});
const REPS = Number(values.reps);
const L06 = Number(values['layers-06b']);
const R = 8;
const triple = (s: string) => s.split(',').map(Number) as [number, number, number];

/** Qwen3-0.6B's config.json shapes (model/init.ts PRESETS), with fewer layers (the output says how many). */
const QWEN3_06B: Qwen3Config = { ...PRESETS['qwen3-0.6b']!, numHiddenLayers: L06 };
const SHAPES: { name: string; cfg: Qwen3Config; bts: [number, number, number]; reps: number }[] = [
  { name: 'tiny (V 151,936)', cfg: PRESETS.tiny!, bts: triple(values.tiny!), reps: REPS },
  { name: `Qwen3-0.6B shape, ${L06}/28 layers`, cfg: QWEN3_06B, bts: triple(values.big!), reps: Math.min(REPS, 2) },
];

/** Every completion position allowed a random 1/8 of the vocabulary (plus the sampled id). */
function masksFor(ids: number[][], S: number, V: number): TokenMasks[] {
  return ids.map((row) => {
    const m = new Int32Array(Math.ceil(V / 32)).map((_, i) => (i % 8 === 0 ? -1 : 0));
    for (const id of row) m[id >> 5]! |= 1 << (id & 31);
    return { table: [m], index: row.map((_, t) => (t >= row.length - S ? 0 : -1)) };
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function timeIt(f: () => void, reps: number): number {
  f(); // warm-up (kernel setup, first allocations)
  const secs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    secs.push((performance.now() - t0) / 1000);
  }
  return median(secs);
}

interface Row {
  shape: string;
  path: string;
  seconds: number;
  tokens: number;
  gflop: number;
  vs: number | null; // before / this (speed-up)
}

function runShape(name: string, cfg: Qwen3Config, [B, T, S]: [number, number, number], reps: number): Row[] {
  const model = randomModel(cfg);
  const adapter = createLora(model, LoraSchema.parse({ r: R }), 7);
  const policy = loraPolicy(model, adapter);
  const inputIds = Array.from({ length: B }, (_, b) => Array.from({ length: T }, (_, t) => (t * 7919 + b * 104729) % cfg.vocabSize));
  const completionMask = inputIds.map((r) => r.map((_, t) => (t >= T - S ? 1 : 0)));
  const all: PolicyBatch = { kind: 'policy', inputIds, completionMask, advantages: inputIds.map((_, b) => (b % 2 ? -1 : 1)) };
  const half: PolicyBatch = { ...all, advantages: inputIds.map((_, b) => (b % 2 ? 0 : 1)) };
  const masked: PolicyBatch = { ...all, masks: masksFor(inputIds, S, cfg.vocabSize) };
  const grpo = { lossType: 'grpo' as const, epsilon: 0.2, betaKl: 0, tisCap: null };
  const step = (batch: PolicyBatch, before: boolean) => () =>
    tf.dispose((before ? fullPathGradients : accumulateGradients)(policy, batch, { microBatchSize: B, grpo, dropoutSeed: 1, withEntropy: true }).grads);
  const work = (before: boolean, idle: (b: number) => boolean) =>
    inputIds.reduce((s, _, b) => s + seqFlops(cfg, R, { T, head: before ? T - 1 : S, backward: before || !idle(b) }), 0) / 1e9;
  const none = () => false;
  const halfIdle = (b: number) => b % 2 === 1;
  const cases: [string, PolicyBatch, boolean, number][] = [
    ['before (head over all positions)', all, true, work(true, none)],
    ['after (head over loss tokens)', all, false, work(false, none)],
    ['before, half the rows A=0', half, true, work(true, none)],
    ['after, half the rows A=0 (no backward)', half, false, work(false, halfIdle)],
    ['after, constrained rows (token masks)', masked, false, work(false, none)],
  ];
  const rows: Row[] = [];
  let base = 0;
  for (const [path, batch, before, gflop] of cases) {
    const seconds = timeIt(step(batch, before), reps);
    if (path.startsWith('before (')) base = seconds;
    console.error(`${name} ${path}: ${seconds.toFixed(2)} s`);
    rows.push({ shape: name, path, seconds, tokens: B * T, gflop, vs: path.startsWith('before (') ? null : base / seconds });
  }
  adapter.dispose();
  model.dispose();
  return rows;
}

function torchRows(name: string, cfg: Qwen3Config, [B, T, S]: [number, number, number], reps: number, base: number): Row[] {
  return [null, S].map((scored) => {
    const arg = {
      D: cfg.hiddenSize,
      F: cfg.intermediateSize,
      L: cfg.numHiddenLayers,
      H: cfg.numAttentionHeads,
      KV: cfg.numKeyValueHeads,
      hd: cfg.headDim,
      V: cfg.vocabSize,
      r: R,
      B,
      T,
      scored,
      reps,
    };
    const out = execFileSync('/usr/bin/python3', [new URL('./torch_lora.py', import.meta.url).pathname, JSON.stringify(arg)], { encoding: 'utf8' });
    const r = JSON.parse(out) as { tokens_per_s: number; threads: number };
    const seconds = (B * T) / r.tokens_per_s;
    const gflop = (B * seqFlops(cfg, R, { T, head: scored ?? T - 1, backward: true })) / 1e9;
    console.error(`${name} torch ${scored ?? 'all'}: ${seconds.toFixed(2)} s`);
    return {
      shape: name,
      path: `PyTorch CPU ${torchVersion()}, ${r.threads} threads, head over ${scored === null ? 'all positions' : 'loss tokens'}`,
      seconds,
      tokens: B * T,
      gflop,
      vs: base / seconds,
    };
  });
}

function torchVersion(): string {
  return execFileSync('/usr/bin/python3', ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8' }).trim();
}

function hasTorch(): boolean {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import torch'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

await selectBackend(values.backend as BackendKind, () => {});
const peak = matmulPeak(2048);
const theory = cpuPeak();
const torch = values.torch !== 'off' && hasTorch();
if (values.torch !== 'off' && !torch) console.log('PyTorch not installed: apt-get install python3-torch');
const rows: Row[] = [];
for (const s of SHAPES.filter((_, i) => values.only!.split(',').includes(i === 0 ? 'tiny' : 'big'))) {
  const ours = runShape(s.name, s.cfg, s.bts, s.reps);
  rows.push(...ours);
  if (torch) rows.push(...torchRows(s.name, s.cfg, s.bts, s.reps, ours[0]!.seconds));
}

const table = (header: string[], body: string[][]) => {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...body.map(line)].join('\n');
};
console.log(
  `tfjs ${tf.getBackend()} (${cpus().length} cores); fp32 peak: measured ${peak.toFixed(1)} GFLOP/s (tfjs ${tf.getBackend()} matmul 2048^3), theoretical ${theory.text}`,
);
console.log(
  `LoRA r ${R} on q,k,v,o,gate,up,down, dropout 0.05; micro-batch B x T tokens, last S the loss tokens: tiny ${values.tiny}, 0.6B ${values.big}; median of ${REPS} (tiny), ${Math.min(REPS, 2)} (0.6B) after a warm-up`,
);
console.log(
  table(
    ['model', 'path', 'step s', 'tokens/s', 'GFLOP', 'GFLOP/s', '% measured peak', 'speed-up vs before'],
    rows.map((r) => [
      r.shape,
      r.path,
      r.seconds.toFixed(3),
      (r.tokens / r.seconds).toFixed(1),
      r.gflop.toFixed(1),
      (r.gflop / r.seconds).toFixed(1),
      ((100 * r.gflop) / r.seconds / peak).toFixed(0),
      r.vs === null ? '1.00' : r.vs.toFixed(2),
    ]),
  ),
);
