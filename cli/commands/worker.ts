// `gsteer worker rollout|group|trainer --run RUN_DIR`: one worker process (gsteer train
// starts these itself; run more by hand on other machines against the same Redis and a
// shared run directory).
import { parseArgs } from 'node:util';
import { InputError } from '../../util/errors.ts';
import { runWorker, WORKER_KINDS, type WorkerKind } from '../../workers/worker-main.ts';

export const summary = 'start one rollout, group or trainer worker for a run';
export const usage = `usage: gsteer worker rollout|group|trainer --run RUN_DIR [--config FILE] [--policy-url URL]

  --run RUN_DIR     the run directory (shared filesystem when on another machine)
  --config FILE     run config (default RUN_DIR/config.yaml, the one gsteer train resolved)
  --policy-url URL  policy server base URL (default: the one in RUN_DIR/run.json, else
                    policy.baseUrl); rollout workers on other machines point at their own
                    inference server here

Rollout workers run rollout.concurrency episodes at once; the trainer worker takes
updates strictly in step order, one at a time. SIGTERM finishes the current job.`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { run: { type: 'string' }, config: { type: 'string' }, 'policy-url': { type: 'string' } },
  });
  if (positionals.length > 1)
    throw new InputError(
      `unexpected ${positionals
        .slice(1)
        .map((p) => `"${p}"`)
        .join(', ')}: a worker takes one kind\n${usage}`,
    );
  const kind = positionals[0];
  if (!WORKER_KINDS.includes(kind as WorkerKind)) throw new InputError(`worker kind "${kind ?? ''}": expected one of ${WORKER_KINDS.join(', ')}\n${usage}`);
  if (!values.run) throw new InputError(`--run RUN_DIR is required\n${usage}`);
  return await runWorker(kind as WorkerKind, values.run, values.config, values['policy-url']);
}
