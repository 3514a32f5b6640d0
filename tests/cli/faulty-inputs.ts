// Faulty command lines a newcomer makes (issue 32 item 7): a mistyped option and an extra
// argument on every command, files where folders go and back, missing inputs, an --out
// that would clobber something, a BOM, an extends cycle. Each should exit 2 with a message
// naming the input and the fix, never a stack trace (exit 1 is kept for `data validate`
// finding problems, as the README says). Used by tests/cli/front-door.test.ts (in process)
// and bench/cli/front-door.ts (the real CLI, printing the table for the issue).
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../e2e/helpers.ts';

export interface FaultyInput {
  /** What the newcomer did. */
  label: string;
  argv: string[];
  /** Exit code the CLI must give (default 2). */
  code?: number;
  /** The message must match (besides naming no stack frame). */
  says?: RegExp;
  /** Environment for this input (default GSTEER_PARTS=synthetic: no model loads). */
  env?: Record<string, string>;
}

export interface Fixtures {
  dir: string;
  file: string; // an existing plain file
  yaml: string; // a valid config
  raw: string; // a raw PDR-Bench folder (copy of data/raw-demo)
  bom: string; // an instances file starting with a BOM
  cycleA: string; // config extends cycle a -> b -> a
  runDir: string; // a folder that is not a run directory
  nonEmpty: string; // a folder holding someone else's files
}

export function makeFixtures(dir: string): Fixtures {
  const fx: Fixtures = {
    dir,
    file: join(dir, 'notes.txt'),
    yaml: join(dir, 'ok.yaml'),
    raw: join(dir, 'raw'),
    bom: join(dir, 'bom.jsonl'),
    cycleA: join(dir, 'a.yaml'),
    runDir: join(dir, 'not-a-run'),
    nonEmpty: join(dir, 'photos'),
  };
  writeFileSync(fx.file, 'hello\n');
  writeFileSync(fx.yaml, 'seed: 1\n');
  cpSync(join(REPO, 'data/raw-demo'), fx.raw, { recursive: true });
  writeFileSync(fx.bom, `\uFEFF{"id":"x"}\n`);
  writeFileSync(fx.cycleA, 'extends: b.yaml\nseed: 1\n');
  writeFileSync(join(dir, 'b.yaml'), 'extends: a.yaml\n');
  mkdirSync(fx.runDir, { recursive: true });
  mkdirSync(fx.nonEmpty, { recursive: true });
  writeFileSync(join(fx.nonEmpty, 'holiday.jpg'), 'not a model');
  return fx;
}

const OPT = /Unknown option '--colour'/;
const POS = /Unexpected argument 'extra'/;

export function faultyInputs(fx: Fixtures): FaultyInput[] {
  const cfg = ['--config', fx.yaml];
  const runs = join(fx.dir, 'runs');
  return [
    { label: 'no command', argv: [], says: /usage: gsteer <command>/ },
    { label: 'unknown command', argv: ['trian'], says: /unknown command "trian"/ },
    // a mistyped option and an extra positional on every command
    { label: 'train: mistyped option', argv: ['train', ...cfg, '--colour'], says: OPT },
    { label: 'train: extra argument', argv: ['train', ...cfg, 'extra'], says: POS },
    { label: 'resume: mistyped option', argv: ['resume', fx.runDir, '--colour'], says: OPT },
    { label: 'resume: two run dirs', argv: ['resume', fx.runDir, 'extra'], says: /one RUN_DIR/ },
    { label: 'clean: mistyped option', argv: ['clean', fx.runDir, '--colour'], says: OPT },
    { label: 'clean: two run dirs', argv: ['clean', fx.runDir, 'extra'], says: /one RUN_DIR/ },
    { label: 'worker: mistyped option', argv: ['worker', 'rollout', '--run', fx.runDir, '--colour'], says: OPT },
    { label: 'worker: extra argument', argv: ['worker', 'rollout', 'extra', '--run', fx.runDir], says: /unexpected "extra"/ },
    { label: 'sft build: mistyped option', argv: ['sft', 'build', '--out', join(fx.dir, 'sft.jsonl'), '--colour'], says: OPT },
    { label: 'sft train: mistyped option', argv: ['sft', 'train', ...cfg, '--colour'], says: OPT },
    { label: 'sft train: extra argument', argv: ['sft', 'train', ...cfg, 'extra'], says: POS },
    { label: 'sft eval: mistyped option', argv: ['sft', 'eval', '--colour'], says: OPT },
    { label: 'sft eval: extra argument', argv: ['sft', 'eval', 'extra'], says: POS },
    { label: 'eval: mistyped option', argv: ['eval', ...cfg, '--colour'], says: OPT },
    { label: 'eval: extra argument', argv: ['eval', ...cfg, 'extra'], says: POS },
    { label: 'eval compare: mistyped option', argv: ['eval', 'compare', fx.file, '--colour'], says: OPT },
    { label: 'eval downstream: mistyped option', argv: ['eval', 'downstream', fx.file, '--colour'], says: OPT },
    { label: 'serve: mistyped option', argv: ['serve', '--model', 'models/tiny-demo', '--colour'], says: OPT },
    { label: 'serve: extra argument', argv: ['serve', '--model', 'models/tiny-demo', 'extra'], says: POS },
    { label: 'monitor: mistyped option', argv: ['monitor', fx.runDir, '--colour'], says: OPT },
    { label: 'monitor: two run dirs', argv: ['monitor', fx.runDir, 'extra'], says: /one RUN_DIR/ },
    { label: 'monitor --serve: mistyped option', argv: ['monitor', fx.runDir, '--serve', '--colour'], says: OPT },
    { label: 'model init: mistyped option', argv: ['model', 'init', '--out', join(fx.dir, 'm'), '--colour'], says: OPT },
    { label: 'model init: extra argument', argv: ['model', 'init', '--out', join(fx.dir, 'm'), 'extra'], says: POS },
    { label: 'model pretrain: mistyped option', argv: ['model', 'pretrain', '--colour'], says: OPT },
    { label: 'model average: mistyped option', argv: ['model', 'average', '--colour'], says: OPT },
    { label: 'model expand: mistyped option', argv: ['model', 'expand', '--colour'], says: OPT },
    { label: 'model logprobs: mistyped option', argv: ['model', 'logprobs', '--colour'], says: OPT },
    { label: 'model logprobs: extra argument', argv: ['model', 'logprobs', 'extra'], says: POS },
    { label: 'model plan: mistyped option', argv: ['model', 'plan', '--colour'], says: OPT },
    { label: 'model plan: extra argument', argv: ['model', 'plan', 'extra'], says: POS },
    { label: 'data validate: mistyped option', argv: ['data', 'validate', fx.bom, '--colour'], says: OPT },
    { label: 'data stats: mistyped option', argv: ['data', 'stats', fx.bom, '--colour'], says: OPT },
    { label: 'data build: mistyped option', argv: ['data', 'build', fx.raw, '--out', join(fx.dir, 'built'), '--colour'], says: OPT },
    { label: 'data build: two raw folders', argv: ['data', 'build', fx.raw, 'extra', '--out', join(fx.dir, 'built')], says: /one RAW_DIR/ },
    { label: 'data split: mistyped option', argv: ['data', 'split', fx.raw, '--colour'], says: OPT },
    { label: 'data split: two raw folders', argv: ['data', 'split', fx.raw, 'extra'], says: /one RAW_DIR/ },
    { label: 'reward: mistyped option', argv: ['reward', '--colour'], says: OPT },
    { label: 'reward: extra argument', argv: ['reward', 'extra'], says: POS },
    { label: 'embed: mistyped option', argv: ['embed', 'hotel', '--colour'], says: OPT },
    { label: 'config show: mistyped option', argv: ['config', 'show', '--colour'], says: OPT },
    { label: 'config show: extra argument', argv: ['config', 'show', 'extra'], says: /extra/ },
    { label: 'demo: mistyped option', argv: ['demo', '--colour'], says: OPT },
    { label: 'demo: extra argument', argv: ['demo', 'extra'], says: POS },
    // unknown subcommands, missing values and required inputs
    { label: 'sft: unknown subcommand', argv: ['sft', 'biuld'], says: /usage: gsteer sft/ },
    { label: 'model: unknown subcommand', argv: ['model', 'inti'], says: /usage:/ },
    { label: 'data: unknown subcommand', argv: ['data', 'vaildate', fx.bom], says: /usage: gsteer data/ },
    { label: 'config: no subcommand', argv: ['config'], says: /usage: gsteer config/ },
    { label: 'worker: unknown kind', argv: ['worker', 'roll', '--run', fx.runDir], says: /expected one of rollout, group, trainer/ },
    { label: 'worker: no --run', argv: ['worker', 'rollout'], says: /--run RUN_DIR is required/ },
    { label: 'train: --config without a value', argv: ['train', '--config'], says: /argument missing/ },
    { label: 'train: config file missing', argv: ['train', '--config', join(fx.dir, 'nope.yaml')], says: /cannot read config/ },
    { label: 'train: --set without =', argv: ['train', ...cfg, '--set', 'seed'], says: /expected key=value/ },
    { label: 'train: unknown config key', argv: ['train', ...cfg, '--set', 'grpo.learnRate=1'], says: /unknown key "grpo.learnRate"/ },
    { label: 'train: run name ".."', argv: ['train', ...cfg, '--set', 'runName=..', '--set', `runDir=${runs}`], says: /runName/ },
    {
      label: 'train: policy model folder missing',
      argv: ['train', ...cfg, '--set', 'policy.model=models/nope', '--set', `runDir=${runs}`],
      says: /policy\.model = models\/nope: folder not found/,
      env: { GSTEER_PARTS: 'real' },
    },
    { label: 'train: init adapter missing', argv: ['train', ...cfg, '--init-adapter', join(fx.dir, 'nope'), '--set', `runDir=${runs}`], says: /initAdapter/ },
    {
      label: 'train: instances file missing',
      argv: ['train', ...cfg, '--set', `data.instances=[${join(fx.dir, 'nope.jsonl')}]`, '--set', `runDir=${runs}`],
      says: /nope\.jsonl/,
    },
    { label: 'train: instances file with a BOM', argv: ['train', ...cfg, '--set', `data.instances=[${fx.bom}]`, '--set', `runDir=${runs}`], says: /BOM/ },
    { label: 'train: config extends itself (a -> b -> a)', argv: ['train', '--config', fx.cycleA], says: /extends.*cycle/ },
    { label: 'config show: extends cycle', argv: ['config', 'show', '--config', fx.cycleA], says: /extends.*cycle/ },
    { label: 'resume: no run dir', argv: ['resume'], says: /one RUN_DIR/ },
    { label: 'resume: not a run dir', argv: ['resume', fx.runDir], says: /not a gsteer run directory/ },
    { label: 'resume: a file', argv: ['resume', fx.file], says: /not a gsteer run directory/ },
    { label: 'clean: not a run dir', argv: ['clean', fx.runDir], says: /not a gsteer run directory/ },
    { label: 'monitor: not a run dir', argv: ['monitor', fx.runDir], says: /not a gsteer run directory|not found/ },
    { label: 'monitor --serve: not a run dir', argv: ['monitor', fx.runDir, '--serve'], says: /not a gsteer run directory|not found/ },
    { label: 'serve: no --model', argv: ['serve'], says: /--model DIR is required/ },
    { label: 'serve: model folder missing', argv: ['serve', '--model', join(fx.dir, 'nope')], says: /nope\/config\.json: cannot read/ },
    { label: 'serve: --port not a number', argv: ['serve', '--model', 'models/tiny-demo', '--port', 'eighty'], says: /--port/ },
    { label: 'serve: --host 0.0.0.0 without a key', argv: ['serve', '--model', 'models/tiny-demo', '--host', '0.0.0.0'], says: /api-key/ },
    { label: 'sft build: --data A B (usage form), no --out', argv: ['sft', 'build', '--data', fx.bom, fx.bom], says: /--out FILE is required/ },
    { label: 'sft build: --out is a folder', argv: ['sft', 'build', '--data', fx.bom, '--out', fx.dir], says: /is a folder/ },
    { label: 'sft build: --seed not a number', argv: ['sft', 'build', '--out', join(fx.dir, 's.jsonl'), '--seed', 'x'], says: /--seed/ },
    { label: 'model init: no --out', argv: ['model', 'init'], says: /--out DIR is required/ },
    { label: 'model init: --out is a file', argv: ['model', 'init', '--out', fx.file], says: /is a file/ },
    { label: 'model init: --out holds other files', argv: ['model', 'init', '--out', fx.nonEmpty], says: /not empty/ },
    {
      label: 'model init: --embed-std not > 0',
      argv: ['model', 'init', '--out', join(fx.dir, 'm3'), '--embed-std', '0'],
      says: /--embed-std must be a number > 0/,
    },
    {
      label: 'model init: unknown drill shape',
      argv: ['model', 'init', '--out', join(fx.dir, 'm4'), '--pretrain', fx.file, '--pretrain-drill-shape', 'bullets'],
      says: /--pretrain-drill-shape bullets is not a drill shape; use one of plain, prompt/,
    },
    { label: 'model init: unknown preset', argv: ['model', 'init', '--out', join(fx.dir, 'm2'), '--preset', 'huge'], says: /--preset huge/ },
    { label: 'model average: one model', argv: ['model', 'average', '--out', join(fx.dir, 'avg'), 'models/tiny-demo'], says: /at least two/ },
    { label: 'model expand: --out is the input', argv: ['model', 'expand', '--out', 'models/tiny-demo', 'models/tiny-demo'], says: /input/ },
    {
      label: 'model logprobs: input file missing',
      argv: ['model', 'logprobs', '--model', 'models/tiny-demo', '--input', join(fx.dir, 'nope.json')],
      says: /nope\.json/,
    },
    { label: 'data validate: no files', argv: ['data', 'validate'], says: /usage: gsteer data/ },
    { label: 'data validate: file with a BOM', argv: ['data', 'validate', fx.bom], code: 1, says: /BOM/ },
    { label: 'data validate: file missing', argv: ['data', 'validate', join(fx.dir, 'nope.jsonl')], code: 1, says: /nope\.jsonl/ },
    { label: 'data build: no --out', argv: ['data', 'build', fx.raw], says: /--out DIR/ },
    { label: 'data build: --out is a file', argv: ['data', 'build', fx.raw, '--out', fx.file], says: /is a file/ },
    { label: 'data build: --out is the raw folder', argv: ['data', 'build', fx.raw, '--out', fx.raw], says: /is the input/ },
    { label: 'data build: --out holds other files', argv: ['data', 'build', fx.raw, '--out', fx.nonEmpty], says: /--force/ },
    { label: 'data build: raw folder missing', argv: ['data', 'build', join(fx.dir, 'nope'), '--out', join(fx.dir, 'built')], says: /nope/ },
    { label: 'data build: --seed not a number', argv: ['data', 'build', fx.raw, '--out', join(fx.dir, 'built'), '--seed', 'x'], says: /--seed x/ },
    {
      label: 'data build: split without training pairs',
      argv: ['data', 'build', fx.raw, '--out', join(fx.dir, 'built'), '--test-fraction', '1', '--held-out-users', '1'],
      says: /no training pairs/,
    },
    {
      label: 'data build: --llm-model without --llm-base-url',
      argv: ['data', 'build', fx.raw, '--out', join(fx.dir, 'built'), '--llm-model', 'm'],
      says: /go together/,
    },
    { label: 'data split: --test-fraction 2', argv: ['data', 'split', fx.raw, '--test-fraction', '2'], says: /--test-fraction 2/ },
    { label: 'data split: --out is a folder', argv: ['data', 'split', fx.raw, '--out', fx.dir], says: /is a folder/ },
    { label: 'reward: no arguments', argv: ['reward'], says: /--instance is required/ },
    {
      label: 'reward: instance file missing',
      argv: ['reward', '--instance', join(fx.dir, 'nope.jsonl'), '--id', 'x', '--trajectory', fx.file],
      says: /nope\.jsonl/,
    },
    { label: 'embed: no text', argv: ['embed'], says: /at least one TEXT/ },
    { label: 'eval: --out is a folder', argv: ['eval', ...cfg, '--out', fx.dir], says: /is a folder/ },
    { label: 'eval compare: no result files', argv: ['eval', 'compare'], says: /no result files/ },
    { label: 'demo: config missing', argv: ['demo', '--config', join(fx.dir, 'nope.yaml')], says: /cannot read config/ },
  ];
}
