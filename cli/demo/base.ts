// The demo's policy base (configs/demo.yaml policy.model, committed as models/tiny-demo):
// the recipe that made it, how `gsteer demo`'s model phase remakes it when the folder is
// missing, and the line the demo prints about the one it finds.
import { appendFileSync, cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sha256File } from '../../util/atomic.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { buildDemoExamples, sftConfig } from './sft-phases.ts';
import { readQwen3Config } from '../../model/config.ts';
import { modelRecords } from '../../model/records.ts';
import { textFilesUnder } from '../../model/vocab-from.ts';

/**
 * How the demo's base (configs/demo.yaml policy.model, committed as models/tiny-demo) was
 * made, and how the model phase remakes it when the folder is missing. The trunk: random
 * init and a full-weight warm-up on the training split of the demo's SFT examples
 * (trainer/pretrain/pretrain.ts), then three more stages at falling peak lr on the same data
 * (held-out valid turns after each: docs/history/demo-base.md, runs R2, S3 and S4). The first
 * entry is `model init --pretrain`, later ones `model pretrain`; step caps, not time caps,
 * end them, so the same backend gives the same bytes.
 */
const stage = (steps: number, lr: string) => ['--pretrain-steps', String(steps), '--pretrain-batch', '1', '--pretrain-lr', lr];
export const DEMO_BASE_STAGES = [stage(3000, '5e-3'), stage(1500, '3e-3'), stage(3000, '2e-3'), stage(1500, '1e-3')];
/**
 * Extra examples a branch can also train on (`--pretrain-extra`), each built next to the
 * SFT examples by `gsteer sft build` with these `--set`s, once per builder seed in `seeds`
 * (the files concatenated in that order; none = the config's seed):
 * - `ratios`: each optional-target ratio of the paper ({0, 0.5, 1}) instead of the backbone alone;
 * - `seeds`: the demo's own settings with 12 other builder seeds, i.e. other memory-hit
 *   scenarios of the same trajectories (docs/history/demo-base.md, "More scenarios").
 */
export interface ExtraExamples {
  file: string;
  sets: string[];
  seeds: number[];
}
export const DEMO_BASE_EXTRAS = {
  ratios: { file: 'examples-extra.jsonl', sets: ['sft.optionalRatios=[0,0.5,1]'], seeds: [] },
  seeds: { file: 'examples-seeds.jsonl', sets: [], seeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] },
} satisfies Record<string, ExtraExamples>;
export type ExtraName = keyof typeof DEMO_BASE_EXTRAS;
/**
 * Then rounds of branches. A round starts from the model so far (the trunk, then the model
 * of the round before), optionally expanded first (`gsteer model expand`: more layers that
 * start as the identity); each branch trains one more stage from that start into its own
 * copy (`--seed` varies the order of the sequences, `--pretrain-split-seed` keeps the
 * held-out split), some also on extra examples (`DEMO_BASE_EXTRAS`; --pretrain-extra
 * leaves out every step whose prompt the demo's examples have, so the held-out prompts stay
 * unseen). The round's model is the uniform mean of its start and its branches (`gsteer
 * model average`), or with `mean: false` its one branch as it is: docs/history/demo-base.md,
 * "Extra data and weight averaging", "More layers: block expansion" and "More scenarios".
 */
export interface Branch {
  seed: number;
  args: string[];
  extra?: ExtraName;
}
/** `mean: false`: the round's model is its one branch, not the mean of the start and the branches. */
export interface Round {
  expandGroups?: number;
  branches: Branch[];
  mean?: false;
}
export const DEMO_BASE_ROUNDS: Round[] = [
  {
    branches: [
      { seed: 42, args: stage(3000, '2e-3'), extra: 'ratios' },
      { seed: 7, args: stage(3000, '2e-3') },
    ],
  },
  { expandGroups: 1, branches: [{ seed: 11, args: stage(3000, '2e-3') }] },
  { branches: [{ seed: 23, args: stage(3000, '2e-3'), extra: 'seeds' }], mean: false },
];
export const DEMO_BASE_MINUTES = 310;

export interface BaseRecipe {
  stages: string[][];
  rounds: Round[];
  extras?: Record<ExtraName, ExtraExamples>;
}

/** Write `x`'s examples to `out` (one `sft build` per seed, concatenated); returns the builder's counts. */
export async function buildExtra(ctx: { configFiles: string[]; sets: string[] }, x: ExtraExamples, out: string): Promise<string> {
  const sets = [...ctx.sets, ...x.sets];
  if (!x.seeds.length) return buildDemoExamples(sftConfig({ configFiles: ctx.configFiles, sets }), out);
  const counts: string[] = [];
  writeFileSync(out, '');
  for (const seed of x.seeds) {
    const part = `${out}.seed-${seed}`;
    counts.push(`seed ${seed}:\n${await buildDemoExamples(sftConfig({ configFiles: ctx.configFiles, sets: [...sets, `seed=${seed}`] }), part)}`);
    appendFileSync(out, readFileSync(part));
    rmSync(part);
  }
  return counts.join('\n');
}

/**
 * Make the base in `cfg.policy.model` with `recipe` (default: the demo's) on the SFT
 * examples the sft-data phase wrote. Parts go to sibling folders: `<model>.trunk`, and for
 * round k `<model>.rk-start` (the expanded start, when the round expands),
 * `<model>.rk-branch-i` and `<model>.rk-mean` (the last round's mean is `<model>` itself);
 * they are removed once the base is written. Returns the exit code of the first command
 * that failed, else 0.
 */
export async function remakeDemoBase(
  ctx: { cfg: RunConfig; configFiles: string[]; sets: string[]; sftExamples: string },
  recipe: BaseRecipe = { stages: DEMO_BASE_STAGES, rounds: DEMO_BASE_ROUNDS, extras: DEMO_BASE_EXTRAS },
): Promise<number> {
  const { cfg, configFiles, sets, sftExamples } = ctx;
  for (const [k, round] of recipe.rounds.entries())
    if (round.mean === false && round.branches.length !== 1)
      throw new Error(
        `demo base recipe: round ${k + 1} has mean: false and ${round.branches.length} branches; a round that keeps its branch takes exactly one`,
      );
  const { run } = await import('../commands/model.ts');
  const out = cfg.policy.model;
  const vocab = [...textFilesUnder('data/demo'), sftExamples].flatMap((f) => ['--vocab-from', f]);
  // the warm-up holds out the same steps as the SFT phase (same split seed and fraction)
  const heldOut = sftConfig({ configFiles, sets }).sft.heldOutFraction;
  const common = ['--pretrain', sftExamples, '--pretrain-held-out', String(heldOut), '--pretrain-split-seed', String(cfg.seed), '--backend', 'wasm'];
  const trunk = `${out}.trunk`;
  const parts = [trunk];
  const fresh = (dir: string) => (rmSync(dir, { recursive: true, force: true }), parts.push(dir), dir); // what an interrupted remake left goes
  fresh(trunk);
  const [first = [], ...more] = recipe.stages;
  let code = await run(['init', '--preset', 'tiny', '--out', trunk, ...vocab, '--seed', String(cfg.seed), ...common, ...first]);
  for (const s of more) if (code === 0) code = await run(['pretrain', '--model', trunk, '--seed', String(cfg.seed), ...common, ...s]);
  const extras = recipe.extras ?? DEMO_BASE_EXTRAS;
  const extraFile = (name: ExtraName) => join(dirname(sftExamples), extras[name].file);
  for (const name of new Set(recipe.rounds.flatMap((r) => r.branches.flatMap((b) => (b.extra ? [b.extra] : []))))) {
    if (code !== 0) break;
    console.error(`demo: extra warm-up examples (${name}) ${extraFile(name)}\n${await buildExtra({ configFiles, sets }, extras[name], extraFile(name))}`);
  }
  let current = trunk;
  for (const [k, round] of recipe.rounds.entries()) {
    if (code !== 0) return code;
    const r = `${out}.r${k + 1}`;
    let start = current;
    if (round.expandGroups) code = await run(['expand', '--out', (start = fresh(`${r}-start`)), '--groups', String(round.expandGroups), current]);
    const branches = round.branches.map((_, i) => `${r}-branch-${i + 1}`);
    for (const [i, b] of round.branches.entries()) {
      if (code !== 0) return code;
      cpSync(start, fresh(branches[i]!), { recursive: true });
      code = await run([
        'pretrain',
        '--model',
        branches[i]!,
        '--seed',
        String(b.seed),
        ...common,
        ...b.args,
        ...(b.extra ? ['--pretrain-extra', extraFile(b.extra)] : []),
      ]);
    }
    if (code !== 0) return code;
    if (round.mean === false) {
      current = branches[0]!;
      continue;
    }
    const mean = k === recipe.rounds.length - 1 ? out : fresh(`${r}-mean`);
    code = branches.length ? await run(['average', '--out', mean, start, ...branches]) : (cpSync(start, mean, { recursive: true }), 0);
    current = mean;
  }
  if (code === 0 && current !== out) cpSync(current, out, { recursive: true });
  if (code === 0) for (const d of parts) rmSync(d, { recursive: true, force: true });
  return code;
}

interface StageRecord {
  steps: number;
  examplesSha256?: string;
  previous?: StageRecord[];
}
interface Records {
  pretrain?: StageRecord;
  average?: { sources: Records[] };
  expand?: { source: Records };
}

/** Every warm-up stage, mean and expansion under a model's records (its own, its sources', its expansion source's), each once. */
function history(r: Records): { stages: StageRecord[]; means: number; expansions: number } {
  const stages = new Map<string, StageRecord>();
  const [means, expansions] = [new Set<string>(), new Set<string>()];
  const walk = (x: Records): void => {
    for (const st of x.pretrain ? [...(x.pretrain.previous ?? []), x.pretrain] : []) stages.set(JSON.stringify({ ...st, previous: undefined }), st);
    if (x.average) means.add(JSON.stringify(x.average));
    if (x.expand) expansions.add(JSON.stringify(x.expand));
    for (const s of x.average?.sources ?? []) walk(s);
    if (x.expand) walk(x.expand.source);
  };
  walk(r);
  return { stages: [...stages.values()], means: means.size, expansions: expansions.size };
}

/** What the base was trained on (from its records: model/records.ts), and whether the SFT examples built now are those. */
export function baseNote(dir: string, examples: string | undefined): string {
  const { stages, means, expansions } = history(modelRecords(dir) as Records);
  if (!stages.length) return '';
  const layers = readQwen3Config(dir).numHiddenLayers;
  const shas = new Set(stages.map((r) => r.examplesSha256).filter((x) => x !== undefined));
  const same = examples && shas.size ? shas.has(sha256File(examples)) && shas.size === 1 : null;
  const made = [`${stages.length} warm-up stage(s), ${stages.reduce((n, x) => n + x.steps, 0)} updates in all`];
  if (means) made.push(`${means} mean(s) of branches`);
  if (expansions) made.push(`${expansions} layer expansion(s)`);
  const note = ` (${layers} layers; ${made.join(', ')}; recipe in its README.md)`;
  if (same === false)
    return `${note}; note: the SFT examples built now differ from the ones it was pretrained on (the builder or data/demo changed): delete the folder to remake it`;
  return note;
}
