// What a worker process loads once: config, run layout, run info, the instances by id and
// the parts. Shared by the rollout, group and trainer workers and the controller.
import { resolve } from 'node:path';
import { readRunConfig } from '../configs/load.ts';
import type { RunConfig } from '../configs/schema.ts';
import { environmentOf, type EnvInstance } from '../rollout/env/index.ts';
import { runLayout, type RunLayout } from '../checkpoints/layout.ts';
import { loadParts } from './load-parts.ts';
import type { Parts } from './parts.ts';
import { readRunInfo, type RunInfo } from '../checkpoints/run-info.ts';

export interface RunContext {
  cfg: RunConfig;
  layout: RunLayout;
  info: RunInfo;
  /** The environment's instances by id (rollout/env/: G-STEER instances or QREF questions). */
  instances: Map<string, EnvInstance>;
  parts: Parts;
  policyUrl: string;
}

export async function loadRunContext(runDir: string, configFile?: string, policyUrl?: string): Promise<RunContext> {
  const layout = runLayout(resolve(runDir));
  const cfg = readRunConfig(configFile ?? layout.config);
  const info = readRunInfo(layout);
  const instances = new Map((await environmentOf(cfg)).load().instances.map((i) => [i.id, i]));
  const url = policyUrl ?? info.policyUrl ?? cfg.policy.baseUrl;
  if (!url) throw new Error(`no policy server URL: pass --policy-url, set policy.baseUrl, or start the run with gsteer train`);
  return { cfg, layout, info, instances, parts: await loadParts(cfg, info.runId, layout.llmCalls), policyUrl: url };
}
