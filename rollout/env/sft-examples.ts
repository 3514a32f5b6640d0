// The environment's SFT examples (method §7; the QREF refiner's demonstrations, method §13):
// what `gsteer sft train` trains on when sft.examples names no file, written to `out`. The
// trainer takes this as data (trainer/sft/train.ts SftRunOptions.writeExamples) and imports
// no environment.
import type { RunConfig } from '../../configs/schema.ts';
import { loadInstances } from '../../data/load.ts';
import { teacherFromConfig } from '../../data/sft/teacher-from-config.ts';
import type { CallSink } from '../../endpoints/index.ts';
import { createEncoder } from '../../encoders/index.ts';
import { writeQrefSftExamples } from '../qref/sft-examples.ts';
import { formatCounts, writeSftDataset } from '../sft-dataset.ts';

/** Writes cfg's environment's examples to `out`; returns what to log. `calls`: where LLM teacher / http encoder calls are recorded. */
export async function writeEnvSftExamples(cfg: RunConfig, out: string, calls: CallSink): Promise<string> {
  if (cfg.env === 'qref') return writeQrefSftExamples(cfg, out); // method §13: the refiner's demonstrations
  const counts = await writeSftDataset(loadInstances(cfg.data.instances), out, {
    seed: cfg.seed,
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
    encoder: createEncoder(cfg.encoder, calls),
    teacher: teacherFromConfig(cfg, calls),
  });
  return `built ${out}\n${formatCounts(counts)}`;
}
