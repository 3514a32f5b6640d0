// The demo's SFT phases (cli/commands/demo.ts runs them around its model phase):
//   sft-data  build the scaffolded examples into <run>/sft/examples.jsonl (seconds), so the
//             model phase can keep their tokens in the tiny model's trimmed vocabulary;
//   sft       train the LoRA on them, report held-out loss and the valid-turn rate, and
//             hand the adapter to the grpo phase as its init adapter.
// Both read configs/sft-demo.yaml layered over the demo's config files (then --set), and do
// nothing when sft.enabled is false there (e.g. --set sft.enabled=false).
import { join } from 'node:path';
import { loadConfig } from '../../configs/load.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { loadInstances } from '../../data/load.ts';
import { createEncoder } from '../../encoders/index.ts';
import { formatCounts, writeSftDataset } from '../../rollout/sft-dataset.ts';
import { sftLayout } from '../../trainer/sft/checkpoint.ts';
import { sftPhase } from './sft-phase.ts';
import { teacherFromConfig } from '../../data/sft/teacher-from-config.ts';

export const SFT_DEMO_CONFIG = 'configs/sft-demo.yaml';

interface Ctx {
  configFiles: string[];
  sets: string[];
  sftExamples?: string;
}

/** The demo config with configs/sft-demo.yaml layered on (and the --set overrides). */
export const sftConfig = (ctx: Ctx): RunConfig => loadConfig([...ctx.configFiles, SFT_DEMO_CONFIG], ctx.sets);

/** Build the scaffolded examples of `cfg` (its data, seed and sft.* knobs) into `out`; returns the printed counts. */
export async function buildDemoExamples(cfg: RunConfig, out: string): Promise<string> {
  const counts = await writeSftDataset(loadInstances(cfg.data.instances), out, {
    seed: cfg.seed,
    optionalRatios: cfg.sft.optionalRatios,
    ordersPerSubgraph: cfg.sft.ordersPerSubgraph,
    order: cfg.sft.order,
    variant: cfg.variant,
    maxTurns: cfg.rollout.maxTurns,
    topK: cfg.rollout.retrieveTopK,
    candidates: cfg.rollout.retrieveCandidates,
    encoder: createEncoder(cfg.encoder),
    teacher: teacherFromConfig(cfg),
  });
  return formatCounts(counts);
}

export const sftDataPhase = {
  name: 'sft-data',
  async run(ctx: Ctx): Promise<{ code: number; sftExamples?: string }> {
    const cfg = sftConfig(ctx);
    if (!cfg.sft.enabled) return { code: 0 };
    const out = sftLayout(join(cfg.runDir, cfg.runName)).examples;
    console.error(`demo: sft examples ${out}\n${await buildDemoExamples(cfg, out)}`);
    return { code: 0, sftExamples: out };
  },
};

export const sftTrainPhase = {
  name: 'sft',
  async run(ctx: Ctx): Promise<{ code: number; initAdapter?: string }> {
    const cfg = sftConfig(ctx);
    if (!cfg.sft.enabled || !ctx.sftExamples) return { code: 0 };
    const r = await sftPhase({ ...cfg, sft: { ...cfg.sft, examples: ctx.sftExamples } }, { baseline: true });
    return { code: 0, initAdapter: r.adapterDir };
  },
};
