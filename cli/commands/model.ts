// `gsteer model init|pretrain|average|expand|logprobs|plan`: create a random tiny Qwen3
// checkpoint, train its base weights, average or expand models, score token ids with a
// model (+ PEFT adapter), or plan a model's memory (cli/commands/model-plan.ts).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { InputError } from '../../util/errors.ts';
import { readJsonl } from '../../util/jsonl.ts';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import { loadPeftAdapter } from '../../model/lora/peft.ts';
import { loadModel, tokenLogprobs } from '../../model/index.ts';
import { AVERAGE_RECORD, averageModels } from '../../model/average.ts';
import { EXPAND_RECORD, expandModel } from '../../model/expand.ts';
import { initModel, PRESETS } from '../../model/init.ts';
import { PRETRAIN_FLAGS, PRETRAIN_USAGE, pretrainOptions, runPretrain } from '../../trainer/pretrain/cli.ts';
import { keptIdsFromFiles, textFilesUnder } from '../../model/vocab-from.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { checkOutDir, checkOutFile } from '../out-path.ts';

export const summary =
  'create a tiny random Qwen3 model, pretrain, average or expand models, score token ids, plan memory (init | pretrain | average | expand | logprobs | plan)';
export const usage = `usage:
  gsteer model init --out DIR [--preset tiny|small|qwen3-0.6b] [--layers N] [--seed N] [--vocab-from FILE ...] [--full-vocab] [--embed-std S]
      Writes a random-initialized Qwen3-shaped model (config.json, generation_config.json,
      model.safetensors, vocab_map.json) using the real Qwen3 token ids; --layers N overrides
      the preset's decoder layer count (e.g. a 4-layer Qwen3-0.6B shape for benchmarks). By default the output
      vocabulary is trimmed to the special tokens, the 256 byte tokens and every token of the
      --vocab-from files (text, or JSON/JSONL string values; default: files under data/demo/);
      --full-vocab keeps all ${PRESETS.tiny?.vocabSize} rows. --embed-std S draws the input embedding
      with std S instead of initializer_range 0.02 (pretraining keeps it frozen; a larger one
      helps a tiny model copy tokens from its prompt: models/tiny-qref/README.md).
${PRETRAIN_USAGE}
  gsteer model pretrain --model DIR --pretrain EXAMPLES.jsonl [--seed N] [--pretrain-* ...]
      One more warm-up stage on a model made with --pretrain (fresh optimizer, its own
      warmup and cosine schedule; the held-out split uses --seed as in init, or --pretrain-split-seed).
      pretrain.json keeps the earlier stages under "previous".
  gsteer model average --out DIR [--weights W1,W2,...] MODEL_DIR MODEL_DIR...
      Writes the weighted mean of the weights (uniform unless --weights) of models of one
      architecture and vocabulary, e.g. a base and a further stage trained from it (a model
      soup). Copies the first model's config and vocabulary files; average.json records the
      sources, their weights and sha256.
  gsteer model expand --out DIR [--groups G] MODEL_DIR
      Writes MODEL_DIR with G more decoder layers (default 1) that change nothing yet (block
      expansion, LLaMA Pro): the layers are cut into G runs and a copy of each run's last
      layer, with zero o_proj and down_proj, goes after it. Train it on with model pretrain;
      expand.json records the source and the layer map.
  gsteer model logprobs --model DIR --input FILE [--adapter DIR] [--backend auto|gpu|node|wasm|cpu]
      Prints per-token logprobs as JSON: one array per input sequence, element t =
      log p(id_t | id_<t), element 0 = 0. FILE is JSON (an array of id arrays) or JSONL
      (one id array, or {"input_ids": [...]}, per line).
  gsteer model plan --config FILE... [--set key=value ...]
      The plan of a run config: each stage it trains (SFT when sft.enabled, then GRPO or
      PPO) at sft.maxSeqLen tokens with its micro-batch (sft.microBatchSize,
      grpo.microBatchSize), recompute (grpo.gradientCheckpointing) and LoRA, against its
      device (trainer.device for backend gpu, the wasm heap, or RAM) and each known GPU.
      The model's config.json, or the published shape of a Qwen3 size its folder is named
      after (models/Qwen3-8B). gsteer train and gsteer sft train make the same check at
      start and refuse (exit 2, with this plan) a config that does not fit its device.
  gsteer model plan --model DIR --seq-len N --micro-batch B
        [--lora-r 8] [--targets q_proj,k_proj,...] [--no-dropout]
        [--backend gpu|node|wasm|cpu] [--recompute]
        [--constrained [--distinct-masks M]] [--loss-tokens S] [--shared-prefix P]
      Memory for LoRA training in tfjs (fp32): frozen base weights, LoRA params, grads and AdamW
      state, activations of one micro-batch (with and without per-layer recomputation,
      including the [B,T,V] logits), and a verdict: for --backend gpu (default) against
      A100-40GB / A100-80GB / H100-80GB (90% usable), for wasm against its 4 GiB heap, for
      cpu/node against this machine's RAM. DIR needs only config.json. --constrained adds the
      grammar masks of constrained turns (rollout.constrained): a [M, V] table of the distinct
      allowed sets of a micro-batch and two [B*T, V] copies; M defaults to B*T, the worst case
      (a policy turn has far fewer distinct sets: one per grammar state). --loss-tokens S: the
      completion (GRPO) or target (SFT) tokens of a micro-batch, the only positions the trainer
      runs through lm_head; default B*T, the bound. --shared-prefix P: tokens at the head of
      the micro-batch's sequences that they all share (a group's first-turn prompt, an episode's
      system prompt), computed once under grpo.prefixGrouping (default on): the forward holds
      P + B*(T-P) token rows instead of B*T; default 0.`;

function parseIds(value: unknown, where: string): number[] {
  const ids = Array.isArray(value) ? value : ((value as { input_ids?: unknown; inputIds?: unknown })?.input_ids ?? (value as { inputIds?: unknown })?.inputIds);
  if (!Array.isArray(ids) || !ids.length || !ids.every((x) => Number.isInteger(x) && x >= 0))
    throw new InputError(`${where}: expected a non-empty array of token ids (or {"input_ids": [...]}), got ${JSON.stringify(value).slice(0, 80)}`);
  return ids as number[];
}

export function readSequences(file: string): number[][] {
  if (file.endsWith('.jsonl')) return readJsonl(file).map((r) => parseIds(r.value, `${r.file}:${r.line}`));
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`${file}: not a readable JSON file (${(e as Error).message}); use JSON (array of id arrays) or .jsonl`);
  }
  const list = Array.isArray(raw) && raw.every((r) => Array.isArray(r) || typeof r === 'object') ? raw : [raw];
  return list.map((v, i) => parseIds(v, `${file}: sequence ${i}`));
}

async function init(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: 'string' },
      preset: { type: 'string', default: 'tiny' },
      layers: { type: 'string' },
      seed: { type: 'string', default: '0' },
      'vocab-from': { type: 'string', multiple: true },
      'full-vocab': { type: 'boolean', default: false },
      'embed-std': { type: 'string' },
      ...PRETRAIN_FLAGS,
    },
  });
  if (!values.out) throw new InputError('model init: --out DIR is required (the folder to write the model into)');
  checkOutDir(values.out, { what: 'model', inputs: values['vocab-from'] ?? [] });
  const preset = PRESETS[values.preset];
  if (!preset) throw new InputError(`model init: --preset ${values.preset} is unknown; use one of ${Object.keys(PRESETS).join(', ')}`);
  const layers = values.layers === undefined ? preset.numHiddenLayers : Number(values.layers);
  if (!Number.isInteger(layers) || layers < 1) throw new InputError(`model init: --layers must be an integer >= 1 but is "${values.layers}"`);
  const cfg = { ...preset, numHiddenLayers: layers };
  const seed = Number(values.seed);
  if (!Number.isInteger(seed)) throw new InputError(`model init: --seed ${values.seed} must be an integer`);
  const embedStd = values['embed-std'] === undefined ? undefined : Number(values['embed-std']);
  if (embedStd !== undefined && !(Number.isFinite(embedStd) && embedStd > 0))
    throw new InputError(`model init: --embed-std must be a number > 0 but is "${values['embed-std']}" (e.g. --embed-std 1)`);
  let keptIds: number[] | null = null;
  if (!values['full-vocab']) {
    const files = values['vocab-from'] ?? textFilesUnder('data/demo');
    keptIds = keptIdsFromFiles(qwen3Tokenizer(), files);
    console.error(`model init: kept ${keptIds.length} token ids (specials, byte tokens, and ${files.length} file(s))`);
  }
  // --pretrain: an untied head (it trains; the input embedding stays frozen), see trainer/pretrain/pretrain.ts
  const pretrain = values.pretrain ? pretrainOptions(values, seed) : null;
  const { params, rows } = initModel(values.out, pretrain ? { ...cfg, tieWordEmbeddings: false } : cfg, { seed, keptIds, embedStd });
  console.error(
    `model init: wrote ${values.out} (preset ${values.preset}, ${layers} layers, ${params.toLocaleString('en')} parameters, ${rows} output rows, seed ${seed})`,
  );
  if (pretrain && values.pretrain) await runPretrain(values.out, values.pretrain, values.backend, pretrain);
  return 0;
}

/** A further warm-up stage on a model `model init --pretrain` made (fresh AdamW, its own schedule). */
async function pretrain(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { model: { type: 'string' }, seed: { type: 'string', default: '0' }, ...PRETRAIN_FLAGS } });
  if (!values.model || !values.pretrain)
    throw new InputError('model pretrain: --model DIR (made by gsteer model init --pretrain) and --pretrain EXAMPLES.jsonl are required');
  const seed = Number(values.seed);
  if (!Number.isInteger(seed)) throw new InputError(`model pretrain: --seed ${values.seed} must be an integer`);
  await runPretrain(values.model, values.pretrain, values.backend, pretrainOptions(values, seed));
  return 0;
}

/** The weighted mean of models of one architecture (model/average.ts). */
async function average(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { out: { type: 'string' }, weights: { type: 'string' } } });
  if (!values.out || positionals.length < 2)
    throw new InputError('model average: --out DIR and at least two model folders are required (gsteer model average --out DIR A B ...)');
  checkOutDir(values.out, { what: 'averaged model', inputs: positionals });
  const weights = values.weights?.split(',').map((x) => Number(x.trim()));
  const sources = averageModels(positionals, values.out, weights);
  console.error(
    `model average: wrote ${values.out} = ${sources.map((s) => `${s.weight.toFixed(3)} x ${s.dir}`).join(' + ')} (sources in ${values.out}/${AVERAGE_RECORD})`,
  );
  return 0;
}

/** More layers that start as the identity (model/expand.ts). */
async function expand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { out: { type: 'string' }, groups: { type: 'string', default: '1' } },
  });
  if (!values.out || positionals.length !== 1)
    throw new InputError('model expand: --out DIR and one model folder are required (gsteer model expand --out DIR [--groups G] MODEL_DIR)');
  checkOutDir(values.out, { what: 'expanded model', inputs: positionals });
  const { layers, map } = expandModel(positionals[0]!, values.out, Number(values.groups));
  console.error(
    `model expand: wrote ${values.out} with ${layers} layers (${map.map((m) => (m.copy ? `${m.from}*` : m.from)).join(', ')}; * = new, output projections zero; record in ${values.out}/${EXPAND_RECORD})`,
  );
  return 0;
}

async function logprobs(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { model: { type: 'string' }, adapter: { type: 'string' }, input: { type: 'string' }, backend: { type: 'string', default: 'auto' } },
  });
  if (!values.model || !values.input) throw new InputError('model logprobs: --model DIR and --input FILE are required');
  const kinds = ['auto', 'gpu', 'node', 'wasm', 'cpu'];
  if (!kinds.includes(values.backend)) throw new InputError(`model logprobs: --backend ${values.backend} must be one of ${kinds.join(', ')}`);
  const seqs = readSequences(values.input);
  await selectBackend(values.backend as BackendKind, () => {});
  const model = await loadModel(values.model);
  const adapter = values.adapter ? loadPeftAdapter(values.adapter, model) : null;
  const { logprobs: lp } = tokenLogprobs(model, adapter, { inputIds: seqs });
  const rows = lp.arraySync();
  lp.dispose();
  process.stdout.write(`${JSON.stringify(seqs.map((s, b) => (rows[b] ?? []).slice(0, s.length)))}\n`);
  adapter?.dispose();
  model.dispose();
  return 0;
}

async function plan(argv: string[]): Promise<number> {
  let mod: { runPlan(argv: string[]): Promise<number> };
  try {
    mod = (await import(new URL('./model-plan.ts', import.meta.url).href)) as typeof mod;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && String(e).includes('model-plan'))
      throw new InputError('model plan: this build has no memory planner (cli/commands/model-plan.ts is missing)');
    throw e;
  }
  return mod.runPlan(argv);
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'init':
      return init(rest);
    case 'pretrain':
      return pretrain(rest);
    case 'average':
      return average(rest);
    case 'expand':
      return expand(rest);
    case 'logprobs':
      return logprobs(rest);
    case 'plan':
      return plan(rest);
    default:
      console.error(usage);
      return 2;
  }
}
