// Prefix-grouped training (method §5.11, issue 22) against the current path, in one run:
//
//   node --import tsx bench/trainer/prefix.ts --run runs/demo [--updates 2] [--backend wasm]
//        [--reps 1] [--micro 2] [--full G,S] [--only demo|full]
//
// The demo's real update batches: the first `--updates` groups of a run (a demo run's
// trajectories, one group per update as in configs/demo.yaml), each turn a row with its
// replayed grammar masks, exactly as the trainer worker builds them (workers/real-parts.ts
// policyRows); the committed demo model (models/tiny-demo, 3,062 output rows) and a fresh LoRA
// (r 8, all projections; random B so every tensor has a gradient). Paths, per update:
//   current         grpo.prefixGrouping=false, micro-batches of --micro sequences (the demo's 2)
//   grouped         prefixGrouping on, the same micro-batch size
//   grouped, whole  prefixGrouping on, the whole update in one micro-batch (fits: shared prefixes are computed once)
// and the same on a full-vocabulary shape (the demo model's layers with a random 151,936-row
// head): a group's G first turns, the first turn prompt of update 1 shared, each with its own
// S-token completion (random ids): the logits [scored, 151,936] of more loss tokens than
// that overflow the wasm heap (bench/trainer/README.md). Step = accumulateGradients (forward,
// backward, accumulation; AdamW is the same for every path and not timed). "computed" =
// token rows the forward computes / tokens of the sequences. Speed-ups against `current`
// of the same batch in the same process. Not part of npm test.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import { loadModel, type Qwen3Model } from '../../model/model.ts';
import { createLora } from '../../model/lora/lora.ts';
import { buildPrefixTree, prefixOrder } from '../../model/prefix-tree.ts';
import { loraPolicy } from '../../trainer/policy-lora.ts';
import { accumulateGradients, type PolicyBatch } from '../../trainer/step.ts';
import { microBatches } from '../../trainer/step-batch.ts';
import { replayTurnMasks } from '../../structured/turn-masks.ts';
import { GrpoSchema, LoraSchema } from '../../configs/schema.ts';
import { readGroupFile } from '../../checkpoints/group-file.ts';
import { runLayout } from '../../checkpoints/layout.ts';
import { buildUpdateBatch } from '../../workers/update-batch.ts';
import { policyRows } from '../../trainer/update/sequences.ts';
import { randomQwen3 } from '../../tests/trainer/step-fixtures.ts';
import { Rng } from '../../util/rng.ts';
import { EVERY_GRAMMAR } from '../../rollout/env/grammars.ts';

const { values } = parseArgs({
  options: {
    run: { type: 'string', default: 'runs/demo' },
    model: { type: 'string', default: 'models/tiny-demo' },
    updates: { type: 'string', default: '2' },
    backend: { type: 'string', default: 'wasm' },
    reps: { type: 'string', default: '1' },
    micro: { type: 'string', default: '2' },
    full: { type: 'string', default: '4,64' },
    // one part per process: the wasm heap never shrinks, so after the demo batches the
    // full-vocabulary logits can find too little of the 4 GiB address space (bench/trainer/README.md)
    only: { type: 'string', default: 'demo,full' },
  },
});
const REPS = Number(values.reps);
const MICRO = Number(values.micro);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
function timeIt(f: () => void): number {
  f(); // warm-up
  const secs: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const t0 = performance.now();
    f();
    secs.push((performance.now() - t0) / 1000);
  }
  return median(secs);
}

/** Token rows the forward computes for these micro-batches: padded B x T, or the prefix tree's rows. */
function computedRows(ids: number[][], micro: number, grouped: boolean): number {
  const order = grouped ? prefixOrder(ids) : ids.map((_, i) => i);
  return microBatches(ids.length, micro).reduce((s, part) => {
    const seqs = part.map((i) => ids[order[i]!]!);
    return s + (grouped ? buildPrefixTree(seqs).rows : seqs.length * Math.max(...seqs.map((q) => q.length)));
  }, 0);
}

interface Row {
  batch: string;
  path: string;
  seconds: number;
  tokens: number;
  computed: number;
  vs: number;
}

function runBatch(name: string, model: Qwen3Model, batch: PolicyBatch): Row[] {
  const adapter = createLora(model, LoraSchema.parse({ dropout: 0 }), 7);
  const r = new Rng(8);
  for (const v of adapter.variables())
    if (v.name.endsWith('lora_B'))
      v.assign(
        tf.tensor(
          Float32Array.from({ length: v.size }, () => r.normal() * 0.02),
          v.shape,
        ),
      );
  const policy = loraPolicy(model, adapter);
  const grpo = { lossType: 'grpo' as const, aggregation: 'turn' as const, epsilon: 0.2, betaKl: 0, tisCap: null };
  const n = batch.inputIds.length;
  const tokens = batch.inputIds.reduce((s, q) => s + q.length, 0);
  const paths: [string, boolean, number][] = [
    [`current, micro-batch ${MICRO}`, false, MICRO],
    [`grouped, micro-batch ${MICRO}`, true, MICRO],
    [`grouped, whole update (${n})`, true, n],
  ];
  const rows: Row[] = [];
  for (const [path, grouped, micro] of paths) {
    const seconds = timeIt(() =>
      tf.dispose(accumulateGradients(policy, batch, { microBatchSize: micro, grpo, withEntropy: true, prefixGrouping: grouped }).grads),
    );
    console.error(`${name} ${path}: ${seconds.toFixed(2)} s`);
    rows.push({ batch: name, path, seconds, tokens, computed: computedRows(batch.inputIds, micro, grouped), vs: rows[0] ? rows[0].seconds / seconds : 1 });
  }
  adapter.dispose();
  return rows;
}

await selectBackend(values.backend as BackendKind, () => {});
const model = await loadModel(values.model!);
const layout = runLayout(values.run!);
const groupFiles = readdirSync(join(values.run!, 'groups'))
  .filter((f) => f.endsWith('.json'))
  .sort()
  .slice(0, Number(values.updates));
if (!groupFiles.length) throw new Error(`${values.run}/groups has no group files; pass --run with a demo run's directory (npm run demo writes runs/demo)`);
const grpoCfg = GrpoSchema.parse({});
const batches: { name: string; batch: PolicyBatch }[] = [];
for (const f of groupFiles) {
  const { sequences } = buildUpdateBatch([readGroupFile(join(values.run!, 'groups', f))], layout, grpoCfg);
  const replay = await replayTurnMasks(sequences, model, EVERY_GRAMMAR);
  // advantages as the run's, but a zero-std group would skip its backward: keep them nonzero for timing
  const rows = policyRows(sequences, false, replay.masks);
  batches.push({
    name: `demo update ${f.replace('.json', '')} (${rows.inputIds.length} turns)`,
    batch: { ...rows, advantages: rows.advantages.map((a, i) => a || (i % 2 ? -0.5 : 0.5)) },
  });
}
const out: Row[] = [];
const only = values.only!.split(',');
if (only.includes('demo')) for (const b of batches) out.push(...runBatch(b.name, model, b.batch));

if (only.includes('full')) {
  // Full vocabulary: the demo model's shape with an untrimmed 151,936-row head (random weights).
  const full = randomQwen3({ ...model.config }, 3);
  const first = batches[0]!.batch;
  const [G, S] = values.full!.split(',').map(Number) as [number, number];
  const prompt = first.inputIds[0]!.filter((_, t) => !first.completionMask[0]![t]);
  const rng = new Rng(9);
  const inputIds = Array.from({ length: G }, () => [...prompt, ...Array.from({ length: S }, () => rng.int(full.config.vocabSize))]);
  const completionMask = inputIds.map((q) => q.map((_, t) => (t >= prompt.length ? 1 : 0)));
  const sub: PolicyBatch = {
    kind: 'policy',
    inputIds,
    completionMask,
    advantages: inputIds.map((_, i) => (i % 2 ? -1 : 1)),
    trajectories: inputIds.map((_, i) => i),
  };
  out.push(...runBatch(`full vocabulary (V 151,936): ${G} first turns, shared ${prompt.length}-token prompt + ${S} own, unmasked`, full, sub));
  full.dispose();
}
model.dispose();

const table = (header: string[], body: string[][]) => {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...body.map(line)].join('\n');
};
console.log(
  `tfjs ${tf.getBackend()}; model ${values.model} (${groupFiles.length} updates of ${values.run}); median of ${REPS} after a warm-up; step = forward + backward + accumulation`,
);
console.log(
  table(
    ['batch', 'path', 'step s', 'tokens/s', 'computed / tokens', 'speed-up vs current'],
    out.map((r) => [
      r.batch,
      r.path,
      r.seconds.toFixed(3),
      (r.tokens / r.seconds).toFixed(0),
      `${r.computed} / ${r.tokens} (${((100 * r.computed) / r.tokens).toFixed(0)}%)`,
      r.vs.toFixed(2),
    ]),
  ),
);
