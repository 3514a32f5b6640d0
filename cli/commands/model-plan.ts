// `gsteer model plan`: will LoRA training of this model fit? Reads config.json (and
// vocab_map.json when present) only, so it works on a folder holding just Qwen3-8B's
// config.json. The `model` command dispatches its `plan` subcommand here (runPlan); its help
// is the `model` command's usage (cli/commands/model.ts).
import { totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { readQwen3Config } from '../../model/config.ts';
import { readVocabMap } from '../../model/vocab-map.ts';
import { PROJ_NAMES, type ProjName } from '../../model/lora/types.ts';
import { fmtBytes, planMemory, verdicts, type PlanLine } from '../../trainer/plan.ts';
import { fitReport, modelShape, stagePlans } from '../../trainer/plan-config.ts';
import { loadConfig } from '../../configs/load.ts';
import { QWEN3_SHAPES } from '../../model/qwen3-shapes.ts';
import { InputError } from '../../util/errors.ts';

const WASM_HEAP = 4 * 2 ** 30; // wasm32: 65536 pages of 64 KiB (tfjs-backend-wasm's maximum)

function positive(name: string, v: string | undefined, fallback?: number): number {
  if (v === undefined && fallback !== undefined) return fallback;
  const n = Number(v);
  if (v === undefined || !Number.isInteger(n) || n <= 0)
    throw new InputError(`model plan: --${name} ${v ?? '(missing)'} must be a positive integer; e.g. --${name} ${fallback ?? 4}`);
  return n;
}

function table(lines: PlanLine[]): string {
  const w = Math.max(...lines.map((l) => l.item.length));
  return lines.map((l) => `  ${l.item.padEnd(w)}  ${fmtBytes(l.bytes).padStart(11)}  ${l.note}`).join('\n');
}

/** `gsteer model plan --config FILE...`: the plan of a run config's stages (trainer/plan-config.ts) and each on the known GPUs. */
async function runConfigPlan(files: string[], sets: string[]): Promise<number> {
  const cfg = loadConfig(files, sets);
  const shape = modelShape(cfg.policy.model);
  if (!shape)
    throw new InputError(
      `model plan: policy.model = ${cfg.policy.model} has no config.json and is no published Qwen3 size (${Object.keys(QWEN3_SHAPES).join(', ')}); put its config.json there or pass --model DIR`,
    );
  const r = fitReport(cfg);
  console.log(r.text);
  console.log('\nverdict per stage (90% of the card usable):');
  for (const s of stagePlans(cfg, shape.config))
    console.log(
      `  ${s.stage.padEnd(5)} ${fmtBytes(s.total).padStart(11)}  ${verdicts(s.total)
        .map((v) => `${v.gpu} ${v.fits ? 'fits' : 'does not fit'}`)
        .join(', ')}`,
    );
  console.log(`\n${r.summary}`);
  return 0;
}

export async function runPlan(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
      model: { type: 'string' },
      'seq-len': { type: 'string' },
      'micro-batch': { type: 'string' },
      'lora-r': { type: 'string' },
      targets: { type: 'string' },
      'no-dropout': { type: 'boolean', default: false },
      backend: { type: 'string', default: 'gpu' },
      recompute: { type: 'boolean', default: false },
      constrained: { type: 'boolean', default: false },
      'distinct-masks': { type: 'string' },
      'loss-tokens': { type: 'string' },
      'shared-prefix': { type: 'string' },
    },
  });
  if (values.config) return runConfigPlan(values.config, values.set ?? []);
  if (!values.model) throw new InputError('model plan: --model DIR is required (a folder with config.json), or --config FILE to plan a run config');
  const cfg = readQwen3Config(values.model);
  const vocab = readVocabMap(values.model, cfg.vocabSize);
  const targets = (values.targets ?? PROJ_NAMES.join(',')).split(',').map((s) => s.trim());
  for (const t of targets)
    if (!(PROJ_NAMES as readonly string[]).includes(t)) throw new InputError(`model plan: --targets has "${t}"; allowed: ${PROJ_NAMES.join(', ')}`);
  const backend = values.backend ?? 'gpu';
  if (!['gpu', 'node', 'wasm', 'cpu'].includes(backend)) throw new InputError(`model plan: --backend ${backend}; use gpu, node, wasm or cpu`);
  const seqLen = positive('seq-len', values['seq-len']);
  const microBatch = positive('micro-batch', values['micro-batch']);
  if (values['distinct-masks'] !== undefined && !values.constrained) throw new InputError('model plan: --distinct-masks needs --constrained');
  const base = {
    seqLen,
    microBatch,
    loraR: positive('lora-r', values['lora-r'], 8),
    targetModules: targets as ProjName[],
    dropout: !values['no-dropout'],
    vocabRows: vocab ? vocab.keptIds.length : cfg.vocabSize,
    ...(values.constrained ? { distinctMasks: positive('distinct-masks', values['distinct-masks'], seqLen * microBatch) } : {}),
    lossTokens: positive('loss-tokens', values['loss-tokens'], seqLen * microBatch),
  };
  const sharedPrefix = values['shared-prefix'] === undefined ? 0 : positive('shared-prefix', values['shared-prefix']);
  if (sharedPrefix > seqLen)
    throw new InputError(`model plan: --shared-prefix ${sharedPrefix} is longer than --seq-len ${seqLen}; the shared head is part of each sequence`);
  Object.assign(base, { sharedPrefix });
  if (base.lossTokens > seqLen * microBatch)
    throw new InputError(
      `model plan: --loss-tokens ${base.lossTokens} is more than the micro-batch's ${seqLen * microBatch} tokens (--seq-len x --micro-batch); lower it`,
    );
  const plans = { off: planMemory(cfg, { ...base, recompute: false }), on: planMemory(cfg, { ...base, recompute: true }) };
  const chosen = values.recompute ? plans.on : plans.off;
  const total = (p: PlanLine[]) => p[p.length - 1]!.bytes;
  console.log(
    `${values.model}: Qwen3 ${cfg.numHiddenLayers} layers, D ${cfg.hiddenSize}, FFN ${cfg.intermediateSize}, heads ${cfg.numAttentionHeads}/${cfg.numKeyValueHeads}, V ${base.vocabRows}`,
  );
  console.log(
    `LoRA training, micro-batch ${base.microBatch} x ${base.seqLen} tokens${sharedPrefix ? ` (${sharedPrefix} shared, computed once)` : ''}, recompute ${values.recompute ? 'on' : 'off'}, backend ${backend}:\n`,
  );
  console.log(table(chosen));
  console.log(`\n  total without recompute ${fmtBytes(total(plans.off))}, with recompute ${fmtBytes(total(plans.on))}\n`);
  // primary verdict for the chosen mode; the other mode is mentioned when it changes the answer
  const other = values.recompute ? 'without --recompute' : 'with --recompute';
  const verdict = (cap: string, fitsChosen: boolean, fitsOther: boolean) =>
    `  ${cap.padEnd(22)} ${fitsChosen ? 'fits' : 'does not fit'}${fitsOther !== fitsChosen ? ` (${other}: ${fitsOther ? 'fits' : 'does not fit'})` : ''}`;
  const [chosenTotal, otherTotal] = values.recompute ? [total(plans.on), total(plans.off)] : [total(plans.off), total(plans.on)];
  if (backend === 'gpu') {
    const a = verdicts(chosenTotal);
    const b = verdicts(otherTotal);
    console.log('verdict (90% of the card usable):');
    a.forEach((v, i) => console.log(verdict(`${v.gpu} (${fmtBytes(v.capacityBytes)})`, v.fits, b[i]!.fits)));
  } else {
    const cap = backend === 'wasm' ? WASM_HEAP : totalmem();
    const what = backend === 'wasm' ? 'wasm heap' : 'this machine RAM';
    console.log('verdict (90% usable):');
    console.log(verdict(`${what} (${fmtBytes(cap)})`, chosenTotal <= 0.9 * cap, otherTotal <= 0.9 * cap));
  }
  return 0;
}
