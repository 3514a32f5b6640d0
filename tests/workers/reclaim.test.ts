// workers/reclaim.ts against real Redis and BullMQ: two workers each hold a job under a
// 10-minute lock and stop without releasing it (as a SIGKILL leaves them). Reclaiming the
// process that recorded worker A moves A's job back to waiting at once, and leaves B's job
// (another worker's, say a live process's) active with its lock.
import { Queue, Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, deletePrefixedKeys } from '../../util/redis.ts';
import { reclaimJobs, registerWorkers, workerKey } from '../../workers/reclaim.ts';
import { queuePrefix } from '../../checkpoints/run-keys.ts';

const prefix = `gsteer-test:reclaim:${Math.random().toString(16).slice(2, 10)}`;
const redis = connect('redis://127.0.0.1:6379');
afterAll(async () => {
  await deletePrefixedKeys(prefix);
  redis.disconnect();
});

describe('reclaimJobs', () => {
  it("moves only the dead process's active jobs back to waiting", async () => {
    const q = new Queue('rollouts', { connection: redis, prefix: queuePrefix(prefix, 'run-x') });
    const hang = () => new Promise<never>(() => undefined);
    const conns = [connect('redis://127.0.0.1:6379'), connect('redis://127.0.0.1:6379')];
    const opts = { prefix: queuePrefix(prefix, 'run-x'), lockDuration: 600_000, autorun: false };
    const a = new Worker('rollouts', hang, { ...opts, connection: conns[0]! });
    const b = new Worker('rollouts', hang, { ...opts, connection: conns[1]! });
    await q.add('r', { k: 'a' }, { jobId: 'job-a' });
    void a.run();
    await poll(async () => (await q.getActiveCount()) === 1, 'worker A takes job-a');
    await q.add('r', { k: 'b' }, { jobId: 'job-b' });
    void b.run();
    await poll(async () => (await q.getActiveCount()) === 2, 'both jobs active');
    // Which worker holds which job: the lock token starts with the worker's id.
    const lockOf = (id: string) => redis.get(`${q.toKey(id)}:lock`);
    expect((await lockOf('job-a'))?.startsWith(`${a.id}:`)).toBe(true);
    expect((await lockOf('job-b'))?.startsWith(`${b.id}:`)).toBe(true);
    await a.close(true);
    await b.close(true);
    for (const c of conns) c.disconnect();
    expect(await lockOf('job-a')).not.toBeNull(); // still locked: only its expiry would free it

    await registerWorkers(redis, prefix, 'run-x', [a.id]);
    expect(await reclaimJobs(redis, prefix, 'run-x', process.pid)).toEqual(['rollouts/job-a']);
    expect(await q.getJobState('job-a')).toBe('waiting');
    expect(await lockOf('job-a')).toBeNull();
    expect(await q.getJobState('job-b')).toBe('active');
    expect(await lockOf('job-b')).not.toBeNull();
    expect(await redis.exists(workerKey(prefix, 'run-x', process.pid))).toBe(0); // the record goes with it
    expect(await reclaimJobs(redis, prefix, 'run-x', process.pid)).toEqual([]); // nothing recorded: nothing moved
    await q.close();
  }, 30_000);
});

async function poll(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (let t = 0; t < 200; t++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
