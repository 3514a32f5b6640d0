// The demo's policy base (configs/demo.yaml policy.model, committed as models/tiny-demo):
// the recipe that made it, how `gsteer demo`'s model phase remakes it when the folder is
// missing, and the line the demo prints about the one it finds.
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sha256File } from '../../checkpoints/atomic.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { buildDemoExamples, sftConfig } from '../../data/sft/demo-phases.ts';
import { AVERAGE_RECORD } from '../../trainer/model/average.ts';
import { textFilesUnder } from '../../trainer/model/vocab-from.ts';

/**
 * How the demo's base (configs/demo.yaml policy.model, committed as models/tiny-demo) was
 * made, and how the model phase remakes it when the folder is missing. The trunk: random
 * init and a full-weight warm-up on the training split of the demo's SFT examples
 * (trainer/model/pretrain.ts), then three more stages at falling peak lr on the same data
 * (held-out valid turns after each: data/sft/README.md, runs R2, S3 and S4). The first
 * entry is `model init --pretrain`, later ones `model pretrain`; step caps, not time caps,
 * end them, so the same backend gives the same bytes.
 */
export const DEMO_BASE_STAGES = [
  ['--pretrain-steps', '3000', '--pretrain-batch', '1', '--pretrain-lr', '5e-3'],
  ['--pretrain-steps', '1500', '--pretrain-batch', '1', '--pretrain-lr', '3e-3'],
  ['--pretrain-steps', '3000', '--pretrain-batch', '1', '--pretrain-lr', '2e-3'],
  ['--pretrain-steps', '1500', '--pretrain-batch', '1', '--pretrain-lr', '1e-3'],
];
/**
 * Then branches: more stages from the trunk, each into its own copy (`--seed` varies the
 * order of the sequences, `--pretrain-split-seed` keeps the held-out split), some also on
 * the extra examples (the demo's instances built with each optional-target ratio of the
 * paper, {0, 0.5, 1}, instead of sft-demo.yaml's backbone alone; --pretrain-extra leaves out
 * every step whose prompt the demo's examples have, so the held-out prompts stay unseen).
 * The base is the uniform mean of the trunk and every branch (`gsteer model average`):
 * data/sft/README.md, "Extra data and weight averaging".
 */
export const DEMO_BASE_BRANCHES: { seed: number; args: string[]; extra: boolean }[] = [
  { seed: 42, args: ['--pretrain-steps', '3000', '--pretrain-batch', '1', '--pretrain-lr', '2e-3'], extra: true },
  { seed: 7, args: ['--pretrain-steps', '3000', '--pretrain-batch', '1', '--pretrain-lr', '2e-3'], extra: false },
];
export const DEMO_BASE_EXTRA = { sets: ['sft.optionalRatios=[0,0.5,1]'], file: 'examples-extra.jsonl' };
export const DEMO_BASE_MINUTES = 200;

export interface BaseRecipe {
  stages: string[][];
  branches: { seed: number; args: string[]; extra: boolean }[];
}

/**
 * Make the base in `cfg.policy.model` with `recipe` (default: the demo's) on the SFT
 * examples the sft-data phase wrote: the trunk and each branch in sibling folders
 * (`<model>.trunk`, `<model>.branch-N`), then their mean; the sibling folders are removed
 * once the mean is written. Returns the exit code of the first command that failed, else 0.
 */
export async function remakeDemoBase(
  ctx: { cfg: RunConfig; configFiles: string[]; sets: string[]; sftExamples: string },
  recipe: BaseRecipe = { stages: DEMO_BASE_STAGES, branches: DEMO_BASE_BRANCHES },
): Promise<number> {
  const { cfg, configFiles, sets, sftExamples } = ctx;
  const { run } = await import('./model.ts');
  const out = cfg.policy.model;
  const vocab = [...textFilesUnder('data/demo'), sftExamples].flatMap((f) => ['--vocab-from', f]);
  // the warm-up holds out the same steps as the SFT phase (same split seed and fraction)
  const heldOut = sftConfig({ configFiles, sets }).sft.heldOutFraction;
  const common = ['--pretrain', sftExamples, '--pretrain-held-out', String(heldOut), '--pretrain-split-seed', String(cfg.seed), '--backend', 'wasm'];
  const seed = ['--seed', String(cfg.seed)];
  const trunk = `${out}.trunk`;
  const [first = [], ...more] = recipe.stages;
  rmSync(trunk, { recursive: true, force: true }); // what an interrupted remake left
  let code = await run(['init', '--preset', 'tiny', '--out', trunk, ...vocab, ...seed, ...common, ...first]);
  for (const stage of more) if (code === 0) code = await run(['pretrain', '--model', trunk, ...seed, ...common, ...stage]);
  if (code !== 0) return code;
  const extra = join(dirname(sftExamples), DEMO_BASE_EXTRA.file);
  if (recipe.branches.some((b) => b.extra))
    console.error(`demo: extra warm-up examples ${extra}\n${await buildDemoExamples(sftConfig({ configFiles, sets: [...sets, ...DEMO_BASE_EXTRA.sets] }), extra)}`);
  const branches = recipe.branches.map((_, i) => `${out}.branch-${i + 1}`);
  for (const [i, b] of recipe.branches.entries()) {
    if (code !== 0) return code;
    rmSync(branches[i]!, { recursive: true, force: true });
    cpSync(trunk, branches[i]!, { recursive: true });
    code = await run(['pretrain', '--model', branches[i]!, '--seed', String(b.seed), ...common, ...b.args, ...(b.extra ? ['--pretrain-extra', extra] : [])]);
  }
  if (code !== 0) return code;
  code = branches.length ? await run(['average', '--out', out, trunk, ...branches]) : (cpSync(trunk, out, { recursive: true }), 0);
  if (code === 0) for (const d of [trunk, ...branches]) rmSync(d, { recursive: true, force: true });
  return code;
}

interface StageRecord { steps: number; examplesSha256?: string; previous?: StageRecord[] }

/** What the base was trained on (its pretrain.json, or the sources' in average.json), and whether the SFT examples built now are those. */
export function baseNote(dir: string, examples: string | undefined): string {
  const read = (f: string): unknown => (existsSync(join(dir, f)) ? JSON.parse(readFileSync(join(dir, f), 'utf8')) : null);
  const stagesOf = (rec: StageRecord) => [...(rec.previous ?? []), rec];
  const single = read('pretrain.json') as StageRecord | null;
  const mean = read(AVERAGE_RECORD) as { sources: { pretrain?: StageRecord }[] } | null;
  const records = single ? [single] : (mean?.sources ?? []).flatMap((s) => (s.pretrain ? [s.pretrain] : []));
  if (!records.length) return '';
  const shas = new Set(records.map((r) => r.examplesSha256).filter((x) => x !== undefined));
  const same = examples && shas.size ? shas.has(sha256File(examples)) && shas.size === 1 : null;
  const trained = records.map((r) => `${stagesOf(r).length} stage(s), ${stagesOf(r).map((x) => x.steps).join(' + ')} updates`);
  const note = single ? ` (pretrained in ${trained[0]}; recipe in its README.md)` : ` (the mean of ${records.length} models pretrained in ${trained.join(' and ')}; recipe in its README.md)`;
  if (same === false) return `${note}; note: the SFT examples built now differ from the ones it was pretrained on (the builder or data/demo changed): delete the folder to remake it`;
  return note;
}

