// `gsteer sft build|train|eval` (method §7): graph-scaffolded SFT examples, LoRA SFT on them,
// and the valid-parse rate of the SFT policy on held-out steps.
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { loadInstances } from '../../data/load.ts';
import { createEncoder } from '../../encoders/index.ts';
import { formatCounts, writeSftDataset } from '../../rollout/sft-dataset.ts';
import { teacherFromConfig } from '../../data/sft/teacher-from-config.ts';
import { InputError } from '../../util/errors.ts';
import { checkOutFile } from '../out-path.ts';

export const summary = 'SFT stage: build scaffolded examples, train the LoRA on them, eval valid turns';
export const usage = `usage: gsteer sft build --data FILE... --out FILE [--seed N] [--config FILE...] [--set k=v...]
       gsteer sft train --config FILE... [--set k=v...] [--resume | --fresh]
       gsteer sft eval --model DIR [--adapter DIR] --examples FILE [--n N] [--seed S] [--config FILE...]

build  Scenario-controlled trajectories from every TRAIN instance's IEG (method §7), one
       example per step: {input: policy messages, target: next turn}. Knobs from the
       config: sft.optionalRatios, sft.ordersPerSubgraph, sft.order (ieg | random), rollout.maxTurns,
       rollout.retrieveCandidates/retrieveTopK, encoder (memory similarity), judge
       (teacher for the refined query: rule = template, llm = judge endpoint).
       Prints trajectory / step counts per scenario kind, and every example over the
       length budgets per action kind (Qwen3 tokens; sft.maxSeqLen: kept whole, trimmed by
       its oldest history, or dropped, as training will; rollout.maxTokens: turns that
       fit). Format: data/sft/README.md.
train  LoRA SFT with masked cross-entropy on the target tokens (sft.* in the config),
       held-out loss, checkpoints every checkpoint.every updates; writes the PEFT
       adapter to <runDir>/<runName>/sft/adapter. --resume continues from the newest
       checkpoint; --fresh discards earlier SFT checkpoints of this run.
eval   Samples N policy turns on held-out steps (seeded; N above the number of held-out
       steps samples each again, e.g. --n 138 = every one of 46 three times) and prints
       the share that parse as valid turns (structured/turn/grammar.ts). --show K prints the first K.`;

async function build(argv: string[]): Promise<number> {
  // `--data A B`: the usage's FILE... form; the files after --data are positionals here
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      data: { type: 'string', multiple: true },
      out: { type: 'string' },
      seed: { type: 'string' },
      config: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
    },
  });
  if (positionals.length && !values.data)
    throw new InputError(`sft build: unexpected ${positionals.map((p) => `"${p}"`).join(', ')}; instance files go after --data (--data FILE...)\n\n${usage}`);
  if (!values.out) throw new InputError('sft build: --out FILE is required (the examples JSONL to write)');
  const cfg = loadConfig(values.config ?? [], values.set ?? []);
  const seed = values.seed === undefined ? cfg.seed : Number(values.seed);
  if (!Number.isInteger(seed)) throw new InputError(`sft build: --seed ${values.seed} is not an integer`);
  const files = values.data ? [...values.data, ...positionals] : cfg.data.instances;
  checkOutFile(values.out, files);
  const instances = loadInstances(files);
  const counts = await writeSftDataset(instances, values.out, {
    seed,
    optionalRatios: cfg.sft.optionalRatios,
    ordersPerSubgraph: cfg.sft.ordersPerSubgraph,
    order: cfg.sft.order,
    variant: cfg.variant,
    memorySamples: cfg.sft.memorySamples,
    stopPoints: cfg.sft.stopPoints,
    lateActivation: cfg.sft.lateActivation,
    maxTurns: cfg.rollout.maxTurns,
    topK: cfg.rollout.retrieveTopK,
    candidates: cfg.rollout.retrieveCandidates,
    encoder: createEncoder(cfg.encoder),
    teacher: teacherFromConfig(cfg),
    budget: { maxSeqLen: cfg.sft.maxSeqLen, maxTokens: cfg.rollout.maxTokens, trim: cfg.sft.overBudget === 'trim' }, // method §7.8: counted with the Qwen3 tokenizer
  });
  console.log(`wrote ${values.out}\n${formatCounts(counts)}`);
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'build':
      return build(rest);
    case 'train':
      return (await import('./sft-train.ts')).sftTrainCommand(rest);
    case 'eval':
      return (await import('./sft-eval.ts')).sftEvalCommand(rest);
    default:
      console.error(usage);
      return 2;
  }
}
