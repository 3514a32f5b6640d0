// `gsteer sft build` (G-STEER's SFT data, method §7): scaffolded trajectories -> step examples
// JSONL, streamed to a temp file and renamed into place (a reader never sees half a file), with
// a progress bar over the training instances and counts per scenario kind and per action.
import { openAtomicWriter } from '../util/atomic.ts';
import type { Instance } from '../data/schema.ts';
import type { Encoder } from '../core/encoder.ts';
import { progressBar } from '../util/progress.ts';
import { InputError } from '../util/errors.ts';
import { buildInstance, type BuildOptions } from '../data/sft/build.ts';
import { trajectoryExamples } from './sft-examples.ts';
import { OfflineMemory } from '../data/sft/memory.ts';
import { SCENARIO_KINDS, type ScenarioKind } from '../data/sft/scenario.ts';
import { qwen3Tokenizer } from '../core/tokenizer.ts';
import { BudgetCounts, fitExample, formatBudget } from '../data/sft/budget.ts';

export interface BuildCounts {
  instances: number;
  trajectories: number;
  steps: number;
  byKind: Record<ScenarioKind, { trajectories: number; steps: number }>;
  byAction: Record<'RETRIEVE' | 'ASK' | 'STOP', number>;
  budget?: BudgetCounts;
}

export type DatasetOptions = Omit<BuildOptions, 'memory'> & {
  encoder: Encoder;
  candidates: number;
  progress?: boolean;
  /** Count every example against the length budgets as training will (budget.ts; `gsteer sft build` prints it). */
  budget?: { maxSeqLen: number; maxTokens: number; trim: boolean };
};

export function emptyCounts(): BuildCounts {
  const byKind = Object.fromEntries(SCENARIO_KINDS.map((k) => [k, { trajectories: 0, steps: 0 }])) as BuildCounts['byKind'];
  return { instances: 0, trajectories: 0, steps: 0, byKind, byAction: { RETRIEVE: 0, ASK: 0, STOP: 0 } };
}

/** Build the examples of every TRAIN instance and write them to `out` (JSONL). */
export async function writeSftDataset(all: readonly Instance[], out: string, o: DatasetOptions): Promise<BuildCounts> {
  const train = all.filter((i) => i.split === 'train');
  if (train.length === 0) throw new InputError(`no instance with split "train" among ${all.length}; SFT trajectories are built from the training split only`);
  const memory = await OfflineMemory.build(train, o.encoder, o.candidates, o.topK);
  const counts = emptyCounts();
  const tok = o.budget ? qwen3Tokenizer() : null;
  if (o.budget) counts.budget = new BudgetCounts(o.budget.maxSeqLen, o.budget.maxTokens, o.budget.trim);
  const file = openAtomicWriter(out);
  const bar = o.progress === false ? null : progressBar('sft build', train.length);
  try {
    for (const inst of train) {
      const trajectories = await buildInstance(inst, { ...o, memory });
      for (const t of trajectories) {
        const examples = trajectoryExamples(inst, t, o.maxTurns, o.variant ?? 'gsteer');
        for (const ex of examples) {
          file.write(`${JSON.stringify(ex)}\n`);
          counts.byAction[ex.action]++;
          if (tok && counts.budget) counts.budget.add(ex.action, fitExample(tok, ex.input, ex.target, counts.budget.maxSeqLen, counts.budget.trim));
        }
        counts.trajectories++;
        counts.steps += examples.length;
        counts.byKind[t.scenario.kind].trajectories++;
        counts.byKind[t.scenario.kind].steps += examples.length;
      }
      counts.instances++;
      bar?.tick(1, `${counts.trajectories} trajectories`);
    }
  } catch (e) {
    file.abort();
    throw e;
  }
  file.commit();
  bar?.done(`${counts.trajectories} trajectories, ${counts.steps} steps`);
  return counts;
}

export function formatCounts(c: BuildCounts): string {
  const lines = [`instances ${c.instances}  trajectories ${c.trajectories}  steps ${c.steps}`];
  for (const k of SCENARIO_KINDS)
    lines.push(`  ${k.padEnd(13)} trajectories ${String(c.byKind[k].trajectories).padStart(6)}  steps ${String(c.byKind[k].steps).padStart(7)}`);
  lines.push(`  actions: RETRIEVE ${c.byAction.RETRIEVE}  ASK ${c.byAction.ASK}  STOP ${c.byAction.STOP}`);
  if (c.budget) lines.push(formatBudget(c.budget));
  return lines.join('\n');
}
