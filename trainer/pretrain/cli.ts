// The `--pretrain*` flags of `gsteer model init` (cli/commands/model.ts): parse, validate,
// run trainer/pretrain/pretrain.ts on the freshly written model and print what it did.
import { DRILL_SHAPES, type DrillShape } from './copy-drill.ts';
import { InputError } from '../../util/errors.ts';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { pretrainModel, type PretrainOptions } from './pretrain.ts';

// Defaults from the runs measured on 2 cores (wasm, tiny preset; docs/history/demo-base.md, "The
// demo's budget"): the whole prompt as context (a cut prompt trains faster but the model
// then fails on the full prompts it is sampled with); batch 1 at lr 5e-3 learns more per
// sequence than batch 2 at 1e-2 or batch 4 at 8e-3.
export const PRETRAIN_DEFAULTS: {
  steps: number;
  seconds: number;
  batch: number;
  lr: number;
  warmup: number;
  context: number | null;
  maxLen: number;
  heldOut: number;
  augment: number;
  drill: number;
} = {
  steps: 500,
  seconds: Infinity,
  batch: 1,
  lr: 5e-3,
  warmup: 20,
  context: null,
  maxLen: 1024,
  heldOut: 0.1,
  augment: 0,
  drill: 0,
};

export const PRETRAIN_FLAGS = {
  pretrain: { type: 'string' },
  'pretrain-steps': { type: 'string' },
  'pretrain-seconds': { type: 'string' },
  'pretrain-batch': { type: 'string' },
  'pretrain-lr': { type: 'string' },
  'pretrain-context': { type: 'string' },
  'pretrain-held-out': { type: 'string' },
  'pretrain-save-every': { type: 'string' },
  'pretrain-augment': { type: 'string' },
  'pretrain-drill': { type: 'string' },
  'pretrain-drill-shape': { type: 'string' },
  'pretrain-extra': { type: 'string' },
  'pretrain-split-seed': { type: 'string' },
  backend: { type: 'string', default: 'auto' },
} as const;

const D = PRETRAIN_DEFAULTS;
export const PRETRAIN_USAGE = `      --pretrain EXAMPLES.jsonl then trains the base weights (full-weight causal LM; the input
      embedding stays frozen, lm_head is untied and trains) on SFT examples (gsteer sft build)
      so the model speaks the turn grammar before LoRA SFT/GRPO. Options:
        --pretrain-steps N (${D.steps}: the cosine schedule's length)  --pretrain-batch B (${D.batch})
        --pretrain-seconds S (none: stops early; the lr schedule stays by step, so only a
          run the step cap ends is reproducible)
        --pretrain-lr LR (${D.lr})  --pretrain-context K|full (${D.context ?? 'full'}: prompt tokens kept before each target)
        --pretrain-held-out F (${D.heldOut}: steps held out as sft.heldOutFraction holds them out, heldOutMask, split with --seed)
        --pretrain-split-seed N (--seed: the held-out split's seed; set it to keep one split while --seed varies the order of the sequences)
        --pretrain-augment F (${D.augment}: share of sequences trained with fresh random words in place of
          the values the policy copies from its prompt, consistently in prompt and target)
        --pretrain-drill F (${D.drill}: share of sequences replaced by copy drills, QREF refiner
          examples only: 3-5 fresh names in the prompt, the same names as the turn's queries)
        --pretrain-drill-shape plain|prompt (plain: the names alone; prompt: in a refiner prompt,
          the system message and an example's reasoning and candidates after them)
        --pretrain-extra FILE (none: more SFT examples to train on, e.g. built with more
          optional-target ratios; a step whose prompt EXAMPLES has is left out, so the
          held-out prompts stay unseen and EXAMPLES' targets stand for its own prompts)
        --pretrain-save-every N (0: only at the end; else also rewrite the weights every N updates)
        --backend auto|gpu|node|wasm|cpu`;

type Values = { [K in keyof typeof PRETRAIN_FLAGS]?: string };

function num(values: Values, key: keyof Values, fallback: number, rule: (x: number) => boolean, what: string): number {
  const raw = values[key];
  if (raw === undefined) return fallback;
  const x = Number(raw);
  if (!rule(x)) throw new InputError(`model init: --${key} ${raw} must be ${what}`);
  return x;
}

export function pretrainOptions(values: Values, seed: number): PretrainOptions {
  const int = (x: number) => Number.isInteger(x) && x > 0;
  const pos = (x: number) => Number.isFinite(x) && x > 0;
  const raw = values['pretrain-context'];
  const context =
    raw === 'full' || (raw === undefined && D.context === null) ? null : num(values, 'pretrain-context', D.context ?? 0, int, 'a positive integer or "full"');
  const steps = num(values, 'pretrain-steps', D.steps, int, 'a positive integer');
  return {
    seed,
    steps,
    seconds: num(values, 'pretrain-seconds', D.seconds, pos, 'a positive number of seconds'),
    batchSize: num(values, 'pretrain-batch', D.batch, int, 'a positive integer'),
    lr: num(values, 'pretrain-lr', D.lr, pos, 'a positive learning rate'),
    warmup: Math.min(D.warmup, Math.floor(steps / 10)),
    weightDecay: 0,
    maxGradNorm: 1,
    context,
    maxLen: D.maxLen,
    splitSeed: values['pretrain-split-seed'] === undefined ? seed : num(values, 'pretrain-split-seed', seed, Number.isInteger, 'an integer'),
    heldOutFraction: num(values, 'pretrain-held-out', D.heldOut, (x) => x >= 0 && x < 1, 'a fraction in [0, 1)'),
    augment: num(values, 'pretrain-augment', D.augment, (x) => x >= 0 && x <= 1, 'a fraction in [0, 1]'),
    drill: num(values, 'pretrain-drill', D.drill, (x) => x >= 0 && x <= 1, 'a fraction in [0, 1]'),
    ...(values['pretrain-drill-shape'] === undefined ? {} : { drillShape: drillShape(values['pretrain-drill-shape']) }),
    extra: values['pretrain-extra'] ?? null,
    saveEvery: values['pretrain-save-every'] === undefined ? 0 : num(values, 'pretrain-save-every', 0, int, 'a positive integer'),
  };
}

export async function runPretrain(dir: string, examples: string, backend: string | undefined, o: PretrainOptions): Promise<void> {
  const kinds = ['auto', 'gpu', 'node', 'wasm', 'cpu'];
  if (!kinds.includes(backend ?? 'auto')) throw new InputError(`model init: --backend ${backend} must be one of ${kinds.join(', ')}`);
  await selectBackend((backend ?? 'auto') as BackendKind);
  const r = await pretrainModel(dir, examples, qwen3Tokenizer(), o);
  console.error(
    `model init: pretrained ${dir} for ${r.steps} updates (${r.tokens.toLocaleString('en')} tokens) in ${r.seconds.toFixed(0)} s${r.augmented ? ` (${r.augmented} with fresh copied values)` : ''}${r.drills ? ` (${r.drills} copy drills)` : ''}; loss ${r.firstLoss.toFixed(3)} -> ${r.lastLoss.toFixed(3)}`,
  );
}

function drillShape(v: string): DrillShape {
  const shape = DRILL_SHAPES.find((s) => s === v);
  if (!shape) throw new InputError(`--pretrain-drill-shape ${v} is not a drill shape; use one of ${DRILL_SHAPES.join(', ')}`);
  return shape;
}
