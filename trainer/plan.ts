// Memory plan for LoRA training a Qwen3 model in tfjs (fp32 everywhere), from config.json
// alone, so a user can ask "does Qwen3-8B at 4k tokens fit on an A100-40GB?" before
// downloading weights. Activations follow the tensors our forward allocates
// (model/decoder-layer.ts, logprobs.ts), scaled by coefficients measured on tfjs
// (CALIBRATION below): inside tf.variableGrads every forward intermediate lives until the
// backward is done, so the activation term is all of them, not only what a hand-written
// backward would keep. It is an estimate (tests hold it within 15% of a measured forward).
import type { Qwen3Config } from '../model/config.ts';
import { PROJ_NAMES, type ProjName } from '../model/lora/types.ts';

export interface PlanOptions {
  seqLen: number; // T
  microBatch: number; // B (sequences per forward/backward)
  loraR: number;
  targetModules: readonly ProjName[];
  /** Per-layer recomputation: keep only each layer's input, re-run one layer in the backward. */
  recompute: boolean;
  /** LoRA dropout > 0 materializes a mask and a masked copy of each LoRA input. */
  dropout: boolean;
  /** Rows of embed/lm_head (a trimmed vocabulary has fewer than vocab_size). */
  vocabRows?: number;
  /**
   * Constrained turns (grammar masks, model/token-masks.ts): the number of distinct allowed
   * sets in one micro-batch (at most B*T; positions of one grammar state share one).
   */
  distinctMasks?: number;
  /**
   * Loss tokens of one micro-batch (completion / SFT target tokens): only these go through
   * lm_head and the log-softmax (model/logprobs.ts `scored`). Default B*T, the bound.
   */
  lossTokens?: number;
  /**
   * Prefix-grouped training (grpo.prefixGrouping, model/prefix-logprobs.ts): tokens at the
   * head of the micro-batch's sequences that they all share (a group's first-turn prompt,
   * an episode's system prompt), computed once: the forward has P + B*(T-P) rows, not B*T.
   */
  sharedPrefix?: number;
}

export interface PlanLine {
  item: string;
  bytes: number;
  note: string;
}

const F32 = 4;

/** [in, out] features of each projection (HF layout W [out, in]). */
export function projDims(c: Qwen3Config): Record<ProjName, [number, number]> {
  const D = c.hiddenSize;
  const q = c.numAttentionHeads * c.headDim;
  const kv = c.numKeyValueHeads * c.headDim;
  const F = c.intermediateSize;
  return { q_proj: [D, q], k_proj: [D, kv], v_proj: [D, kv], o_proj: [q, D], gate_proj: [D, F], up_proj: [D, F], down_proj: [F, D] };
}

/** Frozen base parameters (embedding counted once when tied). */
export function baseParams(c: Qwen3Config, rows = c.vocabSize): number {
  const dims = projDims(c);
  const proj = PROJ_NAMES.reduce((s, m) => s + dims[m][0] * dims[m][1], 0);
  const perLayer = proj + 2 * c.headDim + 2 * c.hiddenSize; // + q_norm, k_norm, two layer norms
  const embed = rows * c.hiddenSize;
  return embed + c.numHiddenLayers * perLayer + c.hiddenSize + (c.tieWordEmbeddings ? 0 : embed);
}

/** LoRA parameters: r * (in + out) per targeted projection per layer (A [r, in], B [out, r]). */
export function loraParams(c: Qwen3Config, r: number, targets: readonly ProjName[]): number {
  const dims = projDims(c);
  return c.numHiddenLayers * targets.reduce((s, m) => s + r * (dims[m][0] + dims[m][1]), 0);
}

/**
 * Calibration of the op-count model against what the tfjs tape really holds, measured with
 * tf.memory() at the end of the forward inside tf.variableGrads on the cpu backend
 * (bench/trainer/plan-calibrate.ts prints these; D 64, F 192, H 4, T 32-64, L 1-3):
 * - TAPE_FACTOR: measured / counted floats of a layer without attention (1.74 with LoRA,
 *   1.88 without): kernels keep inputs and internal temporaries for their gradients.
 * - ATTENTION_COPIES: floats per element of the [B, H, T, T] scores (measured 2.52).
 * - LOGITS_COPIES: floats per element of [B*T, V] (measured 5.44 in the forward) + 1 for
 *   the gradient in the backward.
 * - EDGE_FLOATS_PER_D: embedding gather, final norm, lm_head row gather (measured 13.3 D).
 * - DROPOUT_PER_IN: LoRA dropout (mask, keep test, cast, scaled copy): 4.0 per input float.
 */
export const CALIBRATION = { TAPE_FACTOR: 1.8, ATTENTION_COPIES: 2.5, LOGITS_COPIES: 6.5, EDGE_FLOATS_PER_D: 13, DROPOUT_PER_IN: 4, MASK_COPIES: 2 } as const;

/**
 * Grammar masks of constrained turns: the [M + 1, V] bias table, and MASK_COPIES floats per
 * element of [B*T, V] (the gathered bias rows and the masked logits the log-sum-exp keeps
 * for its gradient; tests/trainer/plan.test.ts measures it).
 */
export function maskFloats(N: number, rows: number, distinct: number): number {
  return (distinct + 1) * rows + CALIBRATION.MASK_COPIES * N * rows;
}

/**
 * Floats one decoder layer allocates per token in the forward (excluding attention scores),
 * as counted from decoder-layer.ts: norms 3 x D each (square, normalized, scaled), each
 * projection its output, a LoRA projection 2 x out + 2r more, q/k norm 3x and rope 5x their
 * width, the k/v/q/ctx transposes, silu 2F, gate*up F, two residual adds; times TAPE_FACTOR;
 * plus DROPOUT_PER_IN x in for each LoRA input when dropout is on.
 */
export function layerFloatsPerToken(c: Qwen3Config, o: Pick<PlanOptions, 'loraR' | 'targetModules' | 'dropout'>): number {
  const D = c.hiddenSize;
  const q = c.numAttentionHeads * c.headDim;
  const kv = c.numKeyValueHeads * c.headDim;
  const F = c.intermediateSize;
  const dims = projDims(c);
  const targeted = PROJ_NAMES.filter((m) => o.targetModules.includes(m));
  const proj = PROJ_NAMES.reduce((s, m) => s + dims[m][1], 0) + targeted.reduce((s, m) => s + 2 * dims[m][1] + 2 * o.loraR, 0);
  const norms = 2 * 3 * D;
  const qk = 8 * q + 8 * kv + kv; // q/k norm (3x) + rope (5x) + k transpose
  const transposes = kv + 2 * q; // v heads, q grouped, ctx back
  const mlp = 3 * F; // sigmoid, silu, gate*up
  const residual = 2 * D;
  const counted = proj + norms + qk + transposes + mlp + residual;
  const dropout = o.dropout ? CALIBRATION.DROPOUT_PER_IN * targeted.reduce((s, m) => s + dims[m][0], 0) : 0;
  return CALIBRATION.TAPE_FACTOR * counted + dropout;
}

/**
 * Attention floats per layer for B sequences: the [B, H, T, T] scores and their copies. With
 * a shared prefix of P tokens computed once: its [H, P, P] scores, each suffix's
 * [H, T-P, T], and each suffix's gathered copy of the prefix keys and values (gather,
 * concat, head-major transpose: 3 copies of [P, KV*hd] for k and for v).
 */
export function attentionFloats(c: Qwen3Config, B: number, T: number, P = 0): number {
  const scores = CALIBRATION.ATTENTION_COPIES * c.numAttentionHeads * (P * P + B * (T - P) * T);
  return scores + (P > 0 && B > 1 ? B * 3 * 2 * P * c.numKeyValueHeads * c.headDim : 0);
}

/** Token rows one micro-batch's forward computes: B*T, or P + B*(T-P) with a shared prefix of P. */
export function computedRows(B: number, T: number, P = 0): number {
  return B > 1 ? P + B * (T - P) : T;
}

/** The plan as table lines; the last is the total. */
export function planMemory(c: Qwen3Config, o: PlanOptions): PlanLine[] {
  const { seqLen: T, microBatch: B } = o;
  const P = Math.min(o.sharedPrefix ?? 0, T);
  const N = computedRows(B, T, P); // rows of the forward
  const rows = o.vocabRows ?? c.vocabSize;
  const L = c.numHiddenLayers;
  const base = baseParams(c, rows) * F32;
  const lora = loraParams(c, o.loraR, o.targetModules) * F32;
  const layer = (layerFloatsPerToken(c, o) * N + attentionFloats(c, B, T, P)) * F32;
  const scored = Math.min(o.lossTokens ?? B * T, B * T); // positions through lm_head
  const logits = CALIBRATION.LOGITS_COPIES * scored * rows * F32;
  const edges = CALIBRATION.EDGE_FLOATS_PER_D * N * c.hiddenSize * F32;
  const acts = o.recompute
    ? // layer inputs kept + one layer re-run in the backward + its gradients
      L * N * c.hiddenSize * F32 + 2 * layer
    : L * layer + layer; // every layer's intermediates + one layer of gradients in flight
  const masks = o.distinctMasks === undefined ? 0 : maskFloats(scored, rows, o.distinctMasks) * F32;
  const total = base + 4 * lora + acts + logits + edges + masks;
  return [
    { item: 'base weights (fp32, frozen)', bytes: base, note: `${fmtCount(baseParams(c, rows))} params${c.tieWordEmbeddings ? ', lm_head tied' : ''}` },
    {
      item: 'LoRA params',
      bytes: lora,
      note: `${fmtCount(loraParams(c, o.loraR, o.targetModules))} params, r=${o.loraR}, ${o.targetModules.length} modules x ${L} layers`,
    },
    { item: 'LoRA grads (accumulated)', bytes: lora, note: 'one buffer summed over micro-batches' },
    { item: 'AdamW m + v', bytes: 2 * lora, note: 'fp32, as torch.optim.AdamW' },
    {
      item: o.recompute ? 'activations (recompute)' : 'activations',
      bytes: acts,
      note: o.recompute
        ? `${L} layer inputs [B*T, D] + 2 layers live`
        : `${L} layers x ${fmtBytes(layer)} (attention [B,H,T,T] ${fmtBytes(attentionFloats(c, B, T, P) * F32)}/layer) + 1 in the backward`,
    },
    ...(P > 0
      ? [
          {
            item: 'prefix grouping',
            bytes: 0,
            note: `${P} shared tokens computed once: ${N} of ${B * T} token rows (${((100 * N) / (B * T)).toFixed(0)}%) in every term above`,
          },
        ]
      : []),
    { item: 'logits [B,T,V]', bytes: logits, note: `${CALIBRATION.LOGITS_COPIES} copies incl. the gradient (${scored} positions x V rows ${rows})` },
    { item: 'embeddings / final norm', bytes: edges, note: '[B*T, D] gathers and norm' },
    ...(o.distinctMasks === undefined
      ? []
      : [
          {
            item: 'grammar masks',
            bytes: masks,
            note: `constrained turns: ${o.distinctMasks} distinct allowed sets [M, V] + ${CALIBRATION.MASK_COPIES} x [loss tokens, V]`,
          },
        ]),
    { item: 'total', bytes: total, note: `micro-batch ${B} x ${T} tokens${P > 0 ? `, ${P} shared` : ''}` },
  ];
}

export interface GpuVerdict {
  gpu: string;
  capacityBytes: number;
  fits: boolean;
  headroomBytes: number;
}

/** Common training GPUs; usable = 90% of the card (CUDA context, allocator fragmentation). */
export const GPUS: readonly { name: string; gib: number }[] = [
  { name: 'A100-40GB', gib: 40 },
  { name: 'A100-80GB', gib: 80 },
  { name: 'H100-80GB', gib: 80 },
];

export function verdicts(totalBytes: number, gpus = GPUS): GpuVerdict[] {
  return gpus.map((g) => {
    const usable = 0.9 * g.gib * 2 ** 30;
    return { gpu: g.name, capacityBytes: g.gib * 2 ** 30, fits: totalBytes <= usable, headroomBytes: usable - totalBytes };
  });
}

export function fmtBytes(b: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Math.abs(b);
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${b < 0 ? '-' : ''}${v.toFixed(u === 0 ? 0 : 2)} ${units[u]}`;
}

export function fmtCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}K`;
  return String(n);
}
