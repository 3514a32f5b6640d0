// The run directory layout (documented in checkpoints/README.md). Every path any part of
// gsteer writes under a run lives here, so the layout reads in one place.
import { join } from 'node:path';

const pad = (n: number) => String(n).padStart(6, '0');

export function runLayout(root: string) {
  return {
    root,
    config: join(root, 'config.yaml'), // the resolved run config
    runJson: join(root, 'run.json'), // run id, epoch (resume count), init adapter
    metrics: join(root, 'metrics.jsonl'),
    llmCalls: join(root, 'llm_calls.jsonl'), // one record per LLM call attempt (workers/llm-calls.ts)
    trainerCalls: join(root, 'trainer_calls.jsonl'), // one record per Tinker API call attempt (trainer/tinker/client/records.ts)
    trainerService: join(root, 'trainer-service'), // the embedded trainer service's states (trainer.engine embedded)
    logs: join(root, 'logs'),
    log: (name: string) => join(root, 'logs', `${name}.log`),
    trajectories: join(root, 'trajectories'),
    /** Relative paths go into job payloads, so a shared filesystem may mount the run anywhere. */
    trajRel: (groupId: string, index: number) => join('trajectories', groupId, `t${index}.json`),
    groupRel: (groupId: string) => join('groups', `${groupId}.json`),
    /** User states right after the group stage of a step (what a checkpoint at that step holds). */
    stepStates: (step: number) => join(root, 'steps', `step-${pad(step)}`, 'user_states.jsonl'),
    adapters: join(root, 'adapters'),
    /** Adapter version n as the trainer wrote it (PEFT files + optimizer + trainer state). */
    adapter: (version: number) => join(root, 'adapters', adapterDirName(version)),
    checkpoints: join(root, 'checkpoints'),
    checkpoint: (step: number) => join(root, 'checkpoints', `step-${pad(step)}`),
    /** `gsteer eval compare`'s tables and Figure 3 for results saved in eval/ (the dashboard serves them). */
    compare: join(root, 'eval', 'compare'),
    abs: (rel: string) => join(root, rel),
  };
}

export type RunLayout = ReturnType<typeof runLayout>;

/** `policy-v000012`: the folder of adapter version 12 (under adapters/, and lagged/ in a checkpoint). */
export const adapterDirName = (version: number) => `policy-v${pad(version)}`;

/** `policy-v12`: the adapter name the policy server is told and rollouts put in `model`. */
export const adapterName = (version: number) => `policy-v${version}`;

/** Parse `step-000010` / `policy-v000010` style names; null for anything else. */
export function numberedName(name: string, prefix: 'step-' | 'policy-v'): number | null {
  const m = new RegExp(`^${prefix}(\\d{6})$`).exec(name);
  return m ? Number(m[1]) : null;
}

/** The line the supervisor writes into RUN/logs/<child>.log each time it restarts a child (the dashboard counts them). */
export const RESTART_MARK = 'gsteer supervisor: restart';
