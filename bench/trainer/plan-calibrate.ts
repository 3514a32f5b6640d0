// Measures the coefficients of trainer/plan.ts CALIBRATION on the current tfjs backend:
//   node --import tsx bench/trainer/plan-calibrate.ts [--backend cpu]
// Each probe runs the LoRA forward inside tf.variableGrads and reads tf.memory().numBytes
// at the loss (every forward intermediate is alive there), then differences two probes to
// isolate one term: per-layer floats (L 3 vs 1), attention (T 64 vs 32), logits (V 1024 vs
// 512), dropout (on vs off), and the remaining embedding / final-norm floats.
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../model/backend.ts';
import { createLora } from '../../model/lora/lora.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import type { Qwen3Config } from '../../model/config.ts';
import { CALIBRATION, layerFloatsPerToken } from '../../trainer/plan.ts';
import { PROJ_NAMES } from '../../model/lora/types.ts';
import { LoraSchema } from '../../configs/schema.ts';
import { randomQwen3 } from '../../tests/trainer/step-fixtures.ts';

const { values } = parseArgs({ options: { backend: { type: 'string', default: 'cpu' } } });
await selectBackend(values.backend as 'cpu', () => {});

const B = 2;
const cfgOf = (L: number, V: number): Qwen3Config => ({
  vocabSize: V,
  hiddenSize: 64,
  intermediateSize: 192,
  numHiddenLayers: L,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 16,
  rmsNormEps: 1e-6,
  ropeTheta: 1e6,
  tieWordEmbeddings: true,
  maxPositionEmbeddings: 4096,
});

/** Forward floats per token alive at the loss. */
function probe(L: number, T: number, V: number, lora: boolean, dropout = 0, recompute = false): number {
  const model = randomQwen3(cfgOf(L, V), 1);
  const a = createLora(model, LoraSchema.parse({ dropout }), 1);
  const ids = Array.from({ length: B }, (_, b) => Array.from({ length: T }, (_, t) => (t * (b + 1)) % V));
  const base = tf.memory().numBytes;
  let atLoss = 0;
  const vars = a.variables();
  const { value, grads } = tf.variableGrads(
    () => {
      const lp = tokenLogprobs(model, lora ? a : null, { inputIds: ids }, { training: true, dropoutSeed: 1, recompute }).logprobs;
      // touch one variable so variableGrads has a path even without the adapter
      const l = tf.add(tf.neg(tf.mean(lp)), tf.mul(tf.sum(vars[0]!), 0)) as tf.Scalar;
      atLoss = tf.memory().numBytes - base;
      return l;
    },
    vars.slice(0, 1),
  );
  tf.dispose([value, ...Object.values(grads)]);
  a.dispose();
  model.dispose();
  return atLoss / 4 / (B * T);
}

const c = cfgOf(1, 512);
const layerLora = (probe(3, 64, 512, true) - probe(1, 64, 512, true)) / 2;
const layerLora32 = (probe(3, 32, 512, true) - probe(1, 32, 512, true)) / 2;
const attnPerT = (layerLora - layerLora32) / 32; // floats per token per key position
const layerPlain = (probe(3, 64, 512, false) - probe(1, 64, 512, false)) / 2;
const logitsPerV = (probe(1, 64, 1024, true) - probe(1, 64, 512, true)) / 512;
const edges = probe(1, 64, 512, true) - layerLora - logitsPerV * 512;
const dropout =
  (probe(1, 64, 512, true, 0.05) - probe(1, 64, 512, true, 0)) / PROJ_NAMES.reduce((s, m) => s + (m === 'o_proj' ? 64 : m === 'down_proj' ? 192 : 64), 0);
const counted = (lora: boolean) => layerFloatsPerToken(c, { loraR: 8, targetModules: lora ? PROJ_NAMES : [], dropout: false }) / CALIBRATION.TAPE_FACTOR;
const rows = {
  'TAPE_FACTOR (with LoRA)': (layerLora - attnPerT * 64) / counted(true),
  'TAPE_FACTOR (no LoRA)': (layerPlain - attnPerT * 64) / counted(false),
  ATTENTION_COPIES: attnPerT / c.numAttentionHeads,
  'LOGITS_COPIES (forward only)': logitsPerV,
  EDGE_FLOATS_PER_D: edges / c.hiddenSize,
  DROPOUT_PER_IN: dropout,
  'recompute: forward floats/token, L 3': probe(3, 64, 512, true, 0, true),
};
console.log(`backend ${tf.getBackend()}; plan.ts uses ${JSON.stringify(CALIBRATION)}`);
for (const [k, v] of Object.entries(rows)) console.log(`  ${k.padEnd(38)} ${v.toFixed(2)}`);
