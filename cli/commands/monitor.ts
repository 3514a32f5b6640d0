// `gsteer monitor RUN_DIR`: the run's reward curves as a table (metrics.jsonl), the queue
// board (job counts per queue), and with --follow every new update as it lands (Redis
// stream), with no extra service. `--serve`: the web dashboard on one or more run
// directories (monitor/dashboard/).
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { runLayout } from '../../checkpoints/layout.ts';
import { readMetrics } from '../../monitor/sink.ts';
import { curvesPanel } from '../../monitor/sparkline.ts';
import { summaryTable } from '../../monitor/summary.ts';
import { InputError } from '../../util/errors.ts';
import { readRunConfig } from '../../configs/load.ts';
import { connect } from '../../util/redis.ts';
import { metricsStreamKey, QUEUE, queuePrefix } from '../../checkpoints/run-keys.ts';
import { readRunInfo } from '../../checkpoints/run-info.ts';
import { pingRedis } from '../../workers/redis-local.ts';
import { followLine } from '../../monitor/follow.ts';
import { serveCommand, SERVE_USAGE } from '../../monitor/dashboard/command.ts';

export const summary = 'show a run: metrics table, queue board, live updates (--follow), web dashboard (--serve)';
export const usage = `usage: gsteer monitor RUN_DIR [--follow] [--rows N]
       gsteer monitor RUN_DIR... --serve [--port P] [--host H] [--token T] [--allow-retries]

Prints the per-update metrics of RUN_DIR/metrics.jsonl (first, evenly spaced, last rows),
sparklines of the main curves (min / last / max, fitted to the terminal width) and, when
Redis answers, the job counts of the run's queues. --follow then prints one line
per new update from the run's Redis stream until Ctrl-C.

${SERVE_USAGE}`;

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--serve')) return await serveCommand(argv);
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { follow: { type: 'boolean', default: false }, rows: { type: 'string', default: '12' } },
  });
  if (positionals.length !== 1) throw new InputError(`expected one RUN_DIR\n${usage}`);
  const layout = runLayout(resolve(positionals[0] as string));
  const cfg = readRunConfig(layout.config);
  const info = readRunInfo(layout);
  const records = readMetrics(layout.metrics);
  console.log(summaryTable(records, Number(values.rows)));
  if (records.length) console.log(`\n${curvesPanel(records, process.stdout.columns || 80)}`);
  if (!(await pingRedis(cfg.queues.redisUrl))) {
    console.log('\n(Redis not reachable: no queue board)');
    return 0;
  }
  const redis = connect(cfg.queues.redisUrl);
  try {
    console.log('\nqueue      waiting  active  delayed  waiting-children  completed  failed');
    for (const name of Object.values(QUEUE)) {
      const q = new Queue(name, { connection: redis, prefix: queuePrefix(cfg.queues.prefix, info.runId), skipMetasUpdate: true });
      const c = await q.getJobCounts('waiting', 'active', 'delayed', 'waiting-children', 'completed', 'failed');
      console.log(
        `${name.padEnd(9)} ${[c.waiting, c.active, c.delayed, c['waiting-children'], c.completed, c.failed].map((n) => String(n ?? 0).padStart(8)).join(' ')}`,
      );
      await q.close();
    }
    if (!values.follow) return 0;
    const key = metricsStreamKey(cfg.queues.prefix, info.runId);
    let last = '$';
    let stop = false;
    process.on('SIGINT', () => (stop = true));
    console.log(`\nfollowing ${key} (Ctrl-C to stop)`);
    while (!stop) {
      const res = (await redis.xread('COUNT', 100, 'BLOCK', 1000, 'STREAMS', key, last)) as [string, [string, string[]][]][] | null;
      for (const [, entries] of res ?? []) {
        for (const [id, fields] of entries) {
          last = id;
          console.log(followLine(JSON.parse(fields[1] as string)));
        }
      }
    }
    return 0;
  } finally {
    redis.disconnect();
  }
}
