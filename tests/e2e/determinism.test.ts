// E2E (real Redis, real processes, synthetic policy/trainer parts): the same seed and
// config, one worker of each kind -> identical per-update metrics, byte-identical adapters
// and identical user states across two runs; the adapter actually moved.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adapterBytes, cli, e2eConfig, instance, reproducibleMetrics, tempRun, writeConfig, removeRuns } from './helpers.ts';

const a = tempRun('det-a');
const b = tempRun('det-b');
// Two users over six instances, so the two groups of an update often share a user: their
// user-state updates must apply in the same order in both runs.
writeFileSync(a.instances, [0, 1, 2, 3, 4, 5].map((k) => JSON.stringify({ ...instance(k), userId: `user-${k % 2}` })).join('\n') + '\n');
b.instances = a.instances; // same dataset file

afterAll(() => removeRuns(a, b));

describe('e2e: determinism', () => {
  it('two runs with the same seed give identical rewards and byte-identical adapters', async () => {
    const ra = cli(['train', '--config', writeConfig(a.dir, e2eConfig(a, 'det'))]);
    const rb = cli(['train', '--config', writeConfig(b.dir, e2eConfig(b, 'det'))]);
    const [xa, xb] = await Promise.all([ra.done, rb.done]);
    expect(xa.code, xa.stderr).toBe(0);
    expect(xb.code, xb.stderr).toBe(0);
    const runA = join(a.dir, 'runs', 'det');
    const runB = join(b.dir, 'runs', 'det');
    const ma = reproducibleMetrics(runA);
    expect(ma.map((r) => r.step)).toEqual([1, 2, 3, 4]);
    expect(ma.every((r) => r.groups === 2 && r.groups_dropped === 0 && r.policy_lag === 0)).toBe(true);
    expect(reproducibleMetrics(runB)).toEqual(ma);
    expect(adapterBytes(runB, 4).equals(adapterBytes(runA, 4))).toBe(true);
    // The trainer did train: the last update changed the adapter.
    expect(adapterBytes(runA, 4).equals(adapterBytes(runA, 3))).toBe(false);
    expect(xa.stdout).toMatch(/done: 4 update\(s\)/);
    // The same user states, memory for memory, in the same order.
    const states = (run: string) => readFileSync(join(run, 'checkpoints', 'step-000004', 'user_states.jsonl'), 'utf8');
    expect(states(runB)).toBe(states(runA));
    expect(states(runA).match(/"sourceInstance"/g)?.length).toBe(8); // one memory per group, 4 updates x 2 groups
  }, 90_000);
});
