// E2E (real Redis, real processes, synthetic parts): runs on one Redis cannot touch each
// other (issue 32 item 1). Two runs with default settings (queue prefix "gsteer", run name
// "gsteer", in two run roots) started at once both finish with exactly the rewards and
// adapter bytes each gets alone; the end of one, and `gsteer clean` of it, leave the
// other's keys; `resume`, `clean` and a second `train` on a live run directory are refused
// naming the owner (pid and host). Then a copy of a live run directory (same run id: the
// run-dir lock cannot see it) is refused by the Redis claim on its queues.
import { cpSync, existsSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runLayout } from '../../checkpoints/layout.ts';
import { readRunInfo } from '../../checkpoints/run-info.ts';
import { runKeyPatterns } from '../../checkpoints/run-keys.ts';
import { globEscape } from '../../util/redis-keys.ts';
import { runKeyPrefix } from '../../util/redis.ts';
import { adapterBytes, cli, e2eConfig, metricLines, removeRuns, reproducibleMetrics, tempRun, waitFor, writeConfig } from './helpers.ts';

const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
const roots = ['a0', 'b0', 'a', 'b'].map((n) => tempRun(`iso-${n}`));
const [a0, b0, a, b] = roots as [ReturnType<typeof tempRun>, ReturnType<typeof tempRun>, ReturnType<typeof tempRun>, ReturnType<typeof tempRun>];
const runOf = (t: { dir: string }) => join(t.dir, 'runs', 'gsteer');
const runIds = () =>
  roots
    .map((t) => {
      try {
        return readRunInfo(runLayout(runOf(t))).runId;
      } catch {
        return null;
      }
    })
    .filter((x): x is string => x !== null);

afterAll(async () => {
  // exactly the keys of these runs (default prefix: each run's own namespace)
  for (const id of runIds()) for (const p of runKeyPatterns('gsteer', id)) for (const k of await redis.keys(p)) await redis.del(k);
  redis.disconnect();
  await removeRuns(...roots);
});

/** Default queue prefix and run name: only the run root, the data and the run's length differ. */
function config(t: ReturnType<typeof tempRun>, seed: number, updates: number): string {
  const cfg = e2eConfig(t, 'gsteer', {
    seed,
    grpo: { maxUpdates: updates, passes: 4, learningRate: 0.1, groupsPerUpdate: 2, maxPolicyLag: 0 },
    checkpoint: { every: 2, keep: 2 },
  });
  delete (cfg.queues as Record<string, unknown>).prefix;
  delete cfg.runName;
  return writeConfig(t.dir, cfg);
}
const env = { GSTEER_SYNTHETIC_TRAIN_MS: '400' };
const slow = { GSTEER_SYNTHETIC_TRAIN_MS: '800' }; // B: still running when it is held (SIGSTOP) after its first checkpoint
const keysOf = async (runDir: string) => (await redis.keys(`${globEscape(runKeyPrefix('gsteer', readRunInfo(runLayout(runDir)).runId))}:*`)).length;

describe('e2e: two runs on one Redis with default settings', () => {
  it('each finishes as it does alone; one ending or cleaned leaves the other; a live run dir refuses resume, clean and train, naming its owner', async () => {
    for (const t of [a, b, a0, b0]) t.instances = a.instances;
    // alone, one after the other: the reference numbers
    const refA = await cli(['train', '--config', config(a0, 7, 2)], env).done;
    expect(refA.code, refA.stderr).toBe(0);
    const refB = await cli(['train', '--config', config(b0, 8, 6)], slow).done;
    expect(refB.code, refB.stderr).toBe(0);

    // together: A (2 updates) ends while B (6) is held live
    const ra = cli(['train', '--config', config(a, 7, 2)], env);
    const rb = cli(['train', '--config', config(b, 8, 6)], slow);
    await waitFor(
      () => existsSync(join(runOf(b), 'checkpoints', 'step-000002', 'manifest.json')) && metricLines(runOf(a)) >= 1,
      120_000,
      "A past its first update, B's first checkpoint written",
    );
    expect(readRunInfo(runLayout(runOf(a))).runId).not.toBe(readRunInfo(runLayout(runOf(b))).runId);

    // B held live while its refusals are tried: its controller stopped (SIGSTOP), so B cannot
    // finish meanwhile whatever the machine's load; its lock, queue claim and workers stay.
    process.kill(rb.proc.pid!, 'SIGSTOP');
    try {
      // a copy of B's live run directory has B's run id: its queues are claimed, so it is refused
      const copyRoot = join(b.dir, 'copy');
      cpSync(runOf(b), copyRoot, { recursive: true, filter: (src) => !src.endsWith('run.lock') });
      const copied = await cli(['resume', copyRoot], env).done;
      expect(copied.code, copied.stderr).toBe(2);
      expect(copied.stderr).toContain(
        `the Redis queues of run ${readRunInfo(runLayout(runOf(b))).runId} are in use by pid ${rb.proc.pid} on host ${hostname()} (run directory ${runOf(b)}`,
      );
      rmSync(copyRoot, { recursive: true, force: true });
      // a live run directory: resume, clean and a second train are refused, naming the owner
      const owner = new RegExp(`is in use by gsteer train \\(pid ${rb.proc.pid} on host ${hostname()}`);
      const [resumed, cleaned, again] = await Promise.all([
        cli(['resume', runOf(b)], env).done,
        cli(['clean', runOf(b)]).done,
        cli(['train', '--config', config(b, 8, 6)], env).done,
      ]);
      expect([resumed.code, resumed.stderr]).toEqual([2, expect.stringMatching(owner)]);
      expect([cleaned.code, cleaned.stderr]).toEqual([2, expect.stringMatching(owner)]);
      expect([again.code, again.stderr]).toEqual([2, expect.stringMatching(owner)]);

      // A ends (it does not wait for B) and removes its own keys; B's stay, and clean of A touches none of them
      const xa = await ra.done;
      expect(xa.code, xa.stderr).toBe(0);
      expect(await keysOf(runOf(a))).toBe(0);
      expect(metricLines(runOf(b))).toBeLessThan(6);
      expect(await keysOf(runOf(b))).toBeGreaterThan(0);
      // B's workers still run while its controller is held: they may finish a job, which drops
      // its lock and trims old jobs, so B's key count may move by itself. What clean of A must
      // not delete is pinned instead: B's queue meta keys (only an obliterate removes them) and
      // sentinels planted in B's namespace, one per key shape a run has (queue and run keys).
      const bPrefix = runKeyPrefix('gsteer', readRunInfo(runLayout(runOf(b))).runId);
      const bMeta = (await redis.keys(`${globEscape(bPrefix)}:*:meta`)).sort();
      expect(bMeta.length).toBeGreaterThan(0);
      const sentinels = [`${bPrefix}:iso-sentinel`, `${bPrefix}:run:iso-sentinel`];
      for (const k of sentinels) await redis.set(k, 'B');
      try {
        const cleanA = await cli(['clean', runOf(a)]).done; // no longer live: clean runs, and touches only A's
        expect(cleanA.code, cleanA.stderr).toBe(0);
        expect(cleanA.stdout).toMatch(/removed 0 key\(s\) of run gsteer-[0-9a-f]{8}/);
        expect(await Promise.all(sentinels.map((k) => redis.get(k)))).toEqual(['B', 'B']);
        expect((await redis.keys(`${globEscape(bPrefix)}:*:meta`)).sort()).toEqual(bMeta);
      } finally {
        await redis.del(...sentinels);
      }
    } finally {
      process.kill(rb.proc.pid!, 'SIGCONT');
    }

    const xb = await rb.done;
    expect(xb.code, xb.stderr).toBe(0);
    // each as it was alone, to the bit
    expect(reproducibleMetrics(runOf(a))).toEqual(reproducibleMetrics(runOf(a0)));
    expect(reproducibleMetrics(runOf(b))).toEqual(reproducibleMetrics(runOf(b0)));
    expect(reproducibleMetrics(runOf(b)).map((m) => m.step)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(adapterBytes(runOf(a), 2).equals(adapterBytes(runOf(a0), 2))).toBe(true);
    expect(adapterBytes(runOf(b), 6).equals(adapterBytes(runOf(b0), 6))).toBe(true);
    expect(reproducibleMetrics(runOf(a))[0]).not.toEqual(reproducibleMetrics(runOf(b))[0]); // different seeds: different runs
    expect(await keysOf(runOf(b))).toBe(0);
  }, 300_000);
});
