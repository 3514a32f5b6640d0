// `gsteer clean RUN_DIR`: remove the Redis keys a run left (a run that was killed or whose
// Redis went away before it could clean up). The prefix and run id come from the run
// directory; nothing outside the run's own keys is touched (workers/run-redis.ts). Refused
// while a command holds the run directory (its lock) or a live process claims its queues.
import { acquireRunLock } from '../../checkpoints/run-lock.ts';
import { describeQueueOwner, liveOwner } from '../../workers/queue-owner.ts';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runLayout } from '../../checkpoints/layout.ts';
import { queuePrefix } from '../../checkpoints/run-keys.ts';
import { readRunInfo } from '../../checkpoints/run-info.ts';
import { readRunConfig } from '../../configs/load.ts';
import { InputError } from '../../util/errors.ts';
import { connect, showUrl } from '../../util/redis.ts';
import { pingRedis } from '../../workers/redis-local.ts';
import { liveWorkers, removeRunKeys } from '../../workers/run-redis.ts';

export const summary = 'remove the Redis keys a run left behind (its queues, user states, metrics stream)';
export const usage = `usage: gsteer clean RUN_DIR [--force]

Reads queues.prefix and the run id from RUN_DIR (config.yaml, run.json) and deletes that
run's keys, every one starting with its run prefix <prefix>:{<runId>} (queues, user states,
metrics stream); no other run's. A finished or stopped run does this itself; clean is for a
run that died. The run directory keeps everything durable: gsteer resume RUN_DIR works after
a clean. Refused while a live gsteer train/resume holds RUN_DIR or claims the run's queues
(named in the message); --force also cleans while BullMQ workers started by hand are
still connected.`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { force: { type: 'boolean', default: false } } });
  if (positionals.length !== 1) throw new InputError(`expected one RUN_DIR, got ${positionals.length}\n${usage}`);
  const layout = runLayout(resolve(positionals[0] as string));
  const info = readRunInfo(layout); // first: a clear error when RUN_DIR is not a run directory
  const cfg = readRunConfig(layout.config);
  const url = cfg.queues.redisUrl;
  const lock = acquireRunLock(layout.root, 'clean'); // a live train/resume here is refused, named
  if (!(await pingRedis(url))) {
    lock.release();
    throw new InputError(`Redis at ${showUrl(url)} (queues.redisUrl in ${layout.config}) does not answer; start it, then run gsteer clean again`);
  }
  const redis = connect(url);
  try {
    const owner = await liveOwner(redis, cfg.queues.prefix, info.runId);
    if (owner) throw new InputError(`the queues of run ${info.runId} are in use by ${describeQueueOwner(owner)}: the run is alive; stop it first (Ctrl-C)`);
    const live = await liveWorkers(redis, cfg.queues.prefix, info.runId);
    if (live > 0 && !values.force)
      throw new InputError(`${live} worker(s) are connected to the queues of run ${info.runId}: the run looks alive; stop it first (Ctrl-C) or pass --force`);
    const n = await removeRunKeys(redis, cfg.queues.prefix, info.runId);
    console.log(`removed ${n} key(s) of run ${info.runId} (prefix ${queuePrefix(cfg.queues.prefix, info.runId)})`);
    return 0;
  } finally {
    redis.disconnect();
    lock.release();
  }
}
