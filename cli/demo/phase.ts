// The demo's phases share one context: the resolved config, the files and --set values it
// came from, and what earlier phases produced.
import type { RunConfig } from '../../configs/schema.ts';

export interface PhaseContext {
  cfg: RunConfig;
  configFiles: string[];
  sets: string[];
  initAdapter?: string;
  sftExamples?: string; // set by the sft-data phase; its tokens go into the tiny model's vocabulary
}

export interface Phase {
  name: string;
  /** trainIds: the train questions later phases train and evaluate on (the QREF demo's select phase), set as grpo.trainIds. */
  run(ctx: PhaseContext): Promise<{ code: number; initAdapter?: string; sftExamples?: string; trainIds?: string[] }>;
}
