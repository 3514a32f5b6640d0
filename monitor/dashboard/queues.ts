// The served runs' BullMQ queues: the board under /queues (bull-board, read-only unless
// --allow-retries) and the job counts the /metrics gauges report. Queues live under a Redis
// URL and the run's own prefix (checkpoints/run-keys.ts queuePrefix); two served runs with
// the same URL and run prefix (a copied run directory) share their queues, listed once.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import type { Router } from 'express';
import { showUrl, type RedisClient } from '../../util/redis.ts';
import { QUEUE, queuePrefix } from '../../checkpoints/run-keys.ts';
import { dashboardRedis, type ServedRun } from './served-run.ts';

export const JOB_STATES = ['waiting', 'active', 'delayed', 'waiting-children', 'prioritized', 'completed', 'failed', 'paused'] as const;

export interface QueueCounts {
  prefix: string;
  queue: string;
  counts: Record<string, number>;
}

export class RunQueues {
  private readonly conns = new Map<string, RedisClient>();
  readonly queues: { prefix: string; queue: Queue; conn: RedisClient }[] = [];

  constructor(runs: readonly ServedRun[]) {
    const seen = new Set<string>();
    for (const run of runs) {
      const { redisUrl } = run.cfg.queues;
      const prefix = queuePrefix(run.cfg.queues.prefix, run.info.runId);
      if (seen.has(`${redisUrl} ${prefix}`)) continue;
      seen.add(`${redisUrl} ${prefix}`);
      let conn = this.conns.get(redisUrl);
      if (!conn) this.conns.set(redisUrl, (conn = dashboardRedis(redisUrl)));
      // skipMetasUpdate: an observer writes nothing (BullMQ's Queue otherwise stores its meta
      // hash on connect, leaving keys behind for a run that deleted its own).
      for (const name of Object.values(QUEUE)) this.queues.push({ prefix, conn, queue: new Queue(name, { connection: conn, prefix, skipMetasUpdate: true }) });
    }
  }

  /**
   * bull-board's router, to mount at `basePath`. It lists the queues whose Redis answers
   * (BullMQ waits for a connection, so a queue on an absent Redis would hang the board),
   * updated as connections come and go.
   */
  board(basePath: string, allowRetries: boolean): Router {
    const adapter = new ExpressAdapter();
    adapter.setBasePath(basePath);
    const multiple = new Set(this.queues.map((q) => q.prefix)).size > 1;
    const adapters = this.queues.map((q) => ({
      conn: q.conn,
      adapter: new BullMQAdapter(q.queue, { readOnlyMode: !allowRetries, allowRetries, ...(multiple ? { prefix: `${q.prefix}:` } : {}) }),
    }));
    const answering = () => adapters.filter((a) => a.conn.status === 'ready').map((a) => a.adapter);
    const board = createBullBoard({ queues: answering(), serverAdapter: adapter, options: { uiConfig: { boardTitle: 'gsteer queues', hideDocsLink: true } } });
    for (const conn of this.conns.values()) for (const ev of ['ready', 'close']) conn.on(ev, () => board.replaceQueues(answering()));
    return adapter.getRouter() as Router;
  }

  /** Job counts of every queue whose Redis answers now (the others are left out, not zero). */
  async counts(): Promise<QueueCounts[]> {
    const out: QueueCounts[] = [];
    for (const { prefix, queue, conn } of this.queues) {
      if (conn.status !== 'ready') continue;
      try {
        const c = await queue.getJobCounts(...JOB_STATES);
        out.push({ prefix, queue: queue.name, counts: c });
      } catch {
        // Redis went away between the check and the call: leave this queue out.
      }
    }
    return out;
  }

  /** Where each Redis is and whether it answers, for the index page. */
  redisStatus(): { url: string; ready: boolean }[] {
    return [...this.conns].map(([url, c]) => ({ url: showUrl(url), ready: c.status === 'ready' }));
  }

  async close(): Promise<void> {
    for (const { queue } of this.queues) await queue.close().catch(() => undefined);
    for (const c of this.conns.values()) c.disconnect();
  }
}
