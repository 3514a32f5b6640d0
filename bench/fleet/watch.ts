// Follows a leg's queues through BullMQ's own event streams (QueueEvents, read by the bench
// process, not the run's): when each job was added, started and finished, so the bench
// knows the episodes in flight at any moment, the rollout throughput over a window, and the
// queue waits (added -> active for rollouts; waiting -> active for group and update jobs,
// which wait first for their children). Times are the stream entries' own (Redis's clock).
import { QueueEvents } from 'bullmq';
import { QUEUE } from '../../checkpoints/run-keys.ts';
import type { RedisClient } from '../../util/redis.ts';

interface Times {
  added?: number;
  waiting?: number;
  active?: number;
  done?: number;
  failed?: boolean; // finished by failing (e.g. cancelled as late), not completed
}

const at = (id: string) => Number(id.split('-')[0]);

export class QueueWatch {
  private readonly events: QueueEvents[] = [];
  private readonly connections: RedisClient[] = [];
  readonly jobs = { rollouts: new Map<string, Times>(), groups: new Map<string, Times>(), updates: new Map<string, Times>() };
  /** Rollout starts and ends in order: +1 / -1 at a time (in-flight over time). */
  readonly flow: [number, number][] = [];

  /** `prefix`: the run's queue prefix (checkpoints/run-keys.ts queuePrefix). */
  constructor(
    private readonly connection: () => RedisClient,
    private readonly prefix: string,
  ) {}

  async start(): Promise<void> {
    for (const name of [QUEUE.rollouts, QUEUE.groups, QUEUE.updates] as const) {
      const connection = this.connection();
      connection.on('error', () => undefined);
      this.connections.push(connection);
      // From the stream's start: the bench may attach after the run's first jobs.
      const e = new QueueEvents(name, { connection, prefix: this.prefix, autorun: true, lastEventId: '0-0' });
      const jobs = this.jobs[name];
      const times = (jobId: string) => jobs.get(jobId) ?? (jobs.set(jobId, {}), jobs.get(jobId)!);
      e.on('added', ({ jobId }, id) => void (times(jobId).added ??= at(id)));
      e.on('waiting', ({ jobId }, id) => void (times(jobId).waiting ??= at(id)));
      e.on('active', ({ jobId }, id) => {
        const t = times(jobId);
        if (name === QUEUE.rollouts && t.active === undefined) this.flow.push([at(id), +1]);
        t.active ??= at(id);
      });
      const end =
        (failed: boolean) =>
        ({ jobId }: { jobId: string }, id: string) => {
          const t = times(jobId);
          if (t.done !== undefined) return;
          t.done = at(id);
          t.failed = failed;
          if (name === QUEUE.rollouts && t.active !== undefined) this.flow.push([at(id), -1]);
        };
      e.on('completed', end(false));
      e.on('failed', end(true));
      e.on('error', () => undefined);
      this.events.push(e);
    }
    await Promise.all(this.events.map((e) => e.waitUntilReady()));
  }

  /** Rollouts active now (started, not finished). */
  inFlight(): number {
    return this.flow.reduce((n, [, d]) => n + d, 0);
  }

  /** Rollouts that completed within [t0, t1] (ms); failed ones (cancelled as late) are not episodes done. */
  finishedIn(t0: number, t1: number): number {
    let n = 0;
    for (const t of this.jobs.rollouts.values()) if (t.done !== undefined && !t.failed && t.active !== undefined && t.done >= t0 && t.done <= t1) n++;
    return n;
  }

  /** Mean rollouts in flight over [t0, t1] (the step function of starts and ends, integrated). */
  meanInFlight(t0: number, t1: number): number {
    const steps = [...this.flow].sort((a, b) => a[0] - b[0]);
    let level = 0;
    let area = 0;
    let last = t0;
    for (const [t, d] of steps) {
      if (t > t1) break;
      if (t > t0) {
        area += level * (t - last);
        last = t;
      }
      level += d;
    }
    area += level * (t1 - last);
    return area / Math.max(1, t1 - t0);
  }

  /** Last time a rollout started: from then on the episodes in flight only drain. */
  lastStarted(): number {
    let m = 0;
    for (const t of this.jobs.rollouts.values()) if (t.active !== undefined) m = Math.max(m, t.active);
    return m;
  }

  /** First time an update job completed (the pipeline is primed). */
  firstUpdateDone(): number {
    let m = Infinity;
    for (const t of this.jobs.updates.values()) if (t.done !== undefined) m = Math.min(m, t.done);
    return m;
  }

  /** Queue waits (ms) of one queue's jobs started within [t0, t1]: rollouts from added, the others from waiting. */
  waits(queue: 'rollouts' | 'groups' | 'updates', t0 = 0, t1 = Infinity): number[] {
    const out: number[] = [];
    for (const t of this.jobs[queue].values()) {
      const from = queue === 'rollouts' ? t.added : (t.waiting ?? t.added);
      if (from !== undefined && t.active !== undefined && t.active >= t0 && t.active <= t1) out.push(t.active - from);
    }
    return out;
  }

  async close(): Promise<void> {
    await Promise.all(this.events.map((e) => e.close()));
    // BullMQ leaves a connection it was given open.
    for (const c of this.connections) c.disconnect();
  }
}
