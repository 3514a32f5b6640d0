// The QREF demo's policy base (configs/qref-demo.yaml policy.model, committed as
// models/tiny-qref): the recipe that grew it with gsteer's own commands, and the runner the
// demo's model phase calls when the folder is missing. Resumable stage by stage: each stage
// trains into its own sibling folder `<model>.stage-k` and, once its command exits 0, writes
// `stage.json` there (its spec, the sha256 of its examples and of the weights it started
// from, its seconds). A rerun skips every stage whose record matches and remakes the first
// one that does not (an interrupted stage, a changed spec or changed examples) and all after
// it, so a growth cut off by a lost session continues where it stopped.
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { sha256File, writeFileAtomic } from '../../util/atomic.ts';
import { PRETRAIN_RECORD, WEIGHTS_FILE } from '../../model/records.ts';
import type { DrillShape } from '../../trainer/pretrain/copy-drill.ts';

/**
 * One stage: `init` makes a fresh model (`gsteer model init --preset tiny --layers N
 * --pretrain`); otherwise the stage starts from the previous stage's model, first expanded by
 * `expand` layer groups (`gsteer model expand`: new layers that start as the identity), and
 * trains with `gsteer model pretrain`. Every stage: full-weight causal LM on the refiner's
 * SFT examples (the train-split demonstrations), `augment` of them with fresh copied names
 * (trainer/pretrain/augment-qref.ts), a `drill` share of them replaced by copy drills
 * (trainer/pretrain/copy-drill.ts), `batch` sequences per update (default 1), warmup then
 * cosine to `steps` at peak `lr`.
 */
export interface QrefBaseStage {
  /** `embedStd`: `model init --embed-std` (absent: initializer_range 0.02). */
  init?: { layers: number; embedStd?: number };
  expand?: number;
  steps: number;
  lr: string;
  augment: number;
  /** The order of the sequences and the augmentation draws. */
  seed: number;
  /** Sequences per update (absent: 1, the first stage's). */
  batch?: number;
  /** Share of sequences replaced by copy drills (`--pretrain-drill`, trainer/pretrain/copy-drill.ts; absent: none). */
  drill?: number;
  /** Where the drills' names stand (`--pretrain-drill-shape`; absent: plain). */
  drillShape?: DrillShape;
}

/** models/tiny-qref/README.md says what each stage did and why. */
export const QREF_BASE_STAGES: QrefBaseStage[] = [
  // copying: plain copy drills only, from a fresh init whose frozen input embedding has std 1
  { init: { layers: 2, embedStd: 1 }, steps: 3000, lr: '6e-3', augment: 0, seed: 42, batch: 16, drill: 1 },
  // the refiner: half drills set in refiner prompts, half demonstrations with fresh names
  { steps: 1000, lr: '6e-3', augment: 1, seed: 42, batch: 16, drill: 0.5, drillShape: 'prompt' },
];
/** What growing the committed base took on the 2-core machine (models/tiny-qref/README.md). */
export const QREF_BASE_MINUTES = 74;
export const STAGE_RECORD = 'stage.json';
export const RECIPE_RECORD = 'recipe.json';

export interface StageRecord {
  stage: number;
  spec: QrefBaseStage;
  examplesSha256: string;
  /** sha256 of the weights the stage started from (null: a fresh init). */
  fromSha256: string | null;
  seconds: number;
  loadAverage: [number, number];
  finishedAt: string;
}

export interface GrowContext {
  /** The base to write (policy.model). */
  out: string;
  /** The refiner's SFT examples (the sft-data phase's file). */
  examples: string;
  /** Files whose tokens the trimmed vocabulary keeps (qrefVocabFiles). */
  vocabFrom: string[];
  /** `gsteer model` (cli/commands/model.ts run), injectable for tests. */
  model: (argv: string[]) => Promise<number>;
  log: (line: string) => void;
}

export const stageDir = (out: string, k: number) => `${out}.stage-${k}`;

const readRecord = (dir: string): StageRecord | null => {
  const f = join(dir, STAGE_RECORD);
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as StageRecord) : null;
};

const flags = (s: QrefBaseStage, examples: string) => [
  '--seed',
  String(s.seed),
  '--pretrain',
  examples,
  '--pretrain-held-out',
  '0',
  '--backend',
  'wasm',
  '--pretrain-steps',
  String(s.steps),
  '--pretrain-batch',
  String(s.batch ?? 1),
  '--pretrain-lr',
  s.lr,
  '--pretrain-augment',
  String(s.augment),
  ...(s.drill ? ['--pretrain-drill', String(s.drill)] : []),
  ...(s.drillShape ? ['--pretrain-drill-shape', s.drillShape] : []),
];

/** The command lines of one stage (for the runner and the README). */
export function stageCommands(s: QrefBaseStage, dir: string, from: string | null, ctx: Pick<GrowContext, 'examples' | 'vocabFrom'>): string[][] {
  if (s.init)
    return [
      [
        'init',
        '--preset',
        'tiny',
        '--layers',
        String(s.init.layers),
        ...(s.init.embedStd === undefined ? [] : ['--embed-std', String(s.init.embedStd)]),
        '--out',
        dir,
        ...ctx.vocabFrom.flatMap((f) => ['--vocab-from', f]),
        ...flags(s, ctx.examples),
      ],
    ];
  if (!from) throw new Error('qref base recipe: the first stage must be an init stage');
  return [...(s.expand ? [['expand', '--out', dir, '--groups', String(s.expand), from]] : []), ['pretrain', '--model', dir, ...flags(s, ctx.examples)]];
}

/**
 * Grow the base in `ctx.out` with `stages`, skipping the stages already done (their
 * stage.json matches); returns the exit code of the first command that failed, else 0. The
 * last stage's model is copied to `ctx.out` with recipe.json (every stage's record and its
 * pretraining losses), then the stage folders go.
 */
export async function growQrefBase(ctx: GrowContext, stages: readonly QrefBaseStage[] = QREF_BASE_STAGES): Promise<number> {
  const examplesSha256 = sha256File(ctx.examples);
  const records: StageRecord[] = [];
  let from: string | null = null;
  let redo = false;
  for (const [i, s] of stages.entries()) {
    const k = i + 1;
    const dir = stageDir(ctx.out, k);
    const fromSha256 = from ? sha256File(join(from, WEIGHTS_FILE)) : null;
    const done = readRecord(dir);
    if (!redo && done && JSON.stringify(done.spec) === JSON.stringify(s) && done.examplesSha256 === examplesSha256 && done.fromSha256 === fromSha256) {
      ctx.log(`qref base: stage ${k}/${stages.length} done before (${dir}, ${done.seconds.toFixed(0)} s), skipped`);
      records.push(done);
      from = dir;
      continue;
    }
    redo = true; // every later stage starts from this one's new weights
    rmSync(dir, { recursive: true, force: true });
    if (from && !s.expand && !s.init) cpSync(from, dir, { recursive: true });
    ctx.log(`qref base: stage ${k}/${stages.length} -> ${dir}`);
    const t0 = performance.now();
    const load = loadavg()[0]!;
    for (const argv of stageCommands(s, dir, from, ctx)) {
      const code = await ctx.model(argv);
      rmSync(join(dir, STAGE_RECORD), { force: true }); // the copied or expanded predecessor's: this stage is not done yet
      if (code !== 0) return code;
    }
    const rec: StageRecord = {
      stage: k,
      spec: s,
      examplesSha256,
      fromSha256,
      seconds: (performance.now() - t0) / 1000,
      loadAverage: [load, loadavg()[0]!],
      finishedAt: new Date().toISOString(),
    };
    writeFileAtomic(join(dir, STAGE_RECORD), `${JSON.stringify(rec, null, 2)}\n`);
    records.push(rec);
    from = dir;
  }
  if (!from) return 0;
  rmSync(ctx.out, { recursive: true, force: true });
  cpSync(from, ctx.out, { recursive: true });
  rmSync(join(ctx.out, STAGE_RECORD), { force: true });
  const losses = (dir: string) => {
    const p = JSON.parse(readFileSync(join(dir, PRETRAIN_RECORD), 'utf8')) as { firstLoss: number; lastLoss: number };
    return { firstLoss: p.firstLoss, lastLoss: p.lastLoss };
  };
  const stagesOut = records.map((r) => ({ ...r, ...losses(stageDir(ctx.out, r.stage)) }));
  writeFileSync(
    join(ctx.out, RECIPE_RECORD),
    `${JSON.stringify({ format: 'gsteer-qref-base/1', examples: ctx.examples, examplesSha256, minutes: stagesOut.reduce((a, r) => a + r.seconds, 0) / 60, stages: stagesOut }, null, 2)}\n`,
  );
  for (const r of records) rmSync(stageDir(ctx.out, r.stage), { recursive: true, force: true });
  return 0;
}
