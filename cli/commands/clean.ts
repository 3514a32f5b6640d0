// `gsteer clean RUN_DIR`: remove the Redis keys a run left (a run that was killed or whose
// Redis went away before it could clean up). The prefix and run id come from the run
// directory; nothing outside the run's own keys is touched (workers/run-redis.ts).
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runLayout } from '../../checkpoints/layout.ts';
import { readRunInfo } from '../../checkpoints/run-info.ts';
import { readRunConfig } from '../../configs/load.ts';
import { InputError } from '../../util/errors.ts';
import { connect, showUrl } from '../../util/redis.ts';
import { pingRedis } from '../../workers/redis-local.ts';
import { liveWorkers, removeRunKeys } from '../../workers/run-redis.ts';

export const summary = "remove the Redis keys a run left behind (its queues, user states, metrics stream)";
export const usage = `usage: gsteer clean RUN_DIR [--force]

Reads queues.prefix and the run id from RUN_DIR (config.yaml, run.json) and deletes that
run's keys: <prefix>:rollouts|groups|updates:*, <prefix>:run:<runId>:* and the metrics
stream <prefix>:metrics:<runId>. A finished or stopped run does this itself; clean is for
a run that died. The run directory keeps everything durable: gsteer resume RUN_DIR works
after a clean. Refuses while workers are connected to the run's queues (a live run) unless
--force.`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { force: { type: 'boolean', default: false } } });
  if (positionals.length !== 1) throw new InputError(`expected one RUN_DIR, got ${positionals.length}\n${usage}`);
  const layout = runLayout(resolve(positionals[0] as string));
  const cfg = readRunConfig(layout.config);
  const info = readRunInfo(layout);
  const url = cfg.queues.redisUrl;
  if (!(await pingRedis(url))) throw new InputError(`Redis at ${showUrl(url)} (queues.redisUrl in ${layout.config}) does not answer; start it, then run gsteer clean again`);
  const redis = connect(url);
  try {
    const live = await liveWorkers(redis, cfg.queues.prefix);
    if (live > 0 && !values.force)
      throw new InputError(`${live} worker(s) are connected to the queues under prefix "${cfg.queues.prefix}": the run looks alive; stop it first (Ctrl-C) or pass --force`);
    const n = await removeRunKeys(redis, cfg.queues.prefix, info.runId);
    console.log(`removed ${n} key(s) of run ${info.runId} under prefix "${cfg.queues.prefix}"`);
    return 0;
  } finally {
    redis.disconnect();
  }
}
