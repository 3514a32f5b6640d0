// A group job that dies after the best trajectory's user-state update was applied, but
// before its group file says so, is retried by BullMQ. The retry must see the change (the
// user's state version moved past the one recorded just before applying) and not apply it
// again: one memory per group, never two. The "crash" is a TransientError thrown right
// after the real (synthetic) update, which is what a retry sees after a SIGKILL there too.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../configs/load.ts';
import { InstanceSchema, type UserState } from '../../data/schema.ts';
import { TransientError } from '../../util/errors.ts';
import { runInProcess } from '../../workers/synthetic/in-process.ts';
import { runLayout } from '../../checkpoints/layout.ts';
import { instance, removeRuns } from '../e2e/helpers.ts';

const root = mkdtempSync(join(tmpdir(), 'gsteer-group-retry-'));
const prefix = `gsteer-test:group-retry:${Math.random().toString(16).slice(2, 10)}`;
afterAll(() => removeRuns({ dir: root, prefix }));

describe('group stage retry', () => {
  it('does not apply a user-state update twice when the job died after applying it', async () => {
    const cfg = resolveConfig({
      runName: 'retry',
      runDir: root,
      seed: 5,
      data: { instances: ['unused.jsonl'] },
      policy: { server: 'external', baseUrl: 'http://127.0.0.1:1/v1', maxRetries: 0 },
      rollout: { groupSize: 2, concurrency: 2 },
      grpo: { passes: 1, groupsPerUpdate: 2, learningRate: 0.1 },
      queues: { prefix, attempts: 3, backoffMs: 50, pollMs: 50 },
    });
    let applyCalls = 0;
    let crashed = false;
    const logs: string[] = [];
    const r = await runInProcess(
      cfg,
      [instance(0), instance(1)].map((i) => InstanceSchema.parse(i)),
      {
        latencyMs: 0,
        log: (m) => logs.push(m),
        parts: (p) => ({
          ...p,
          users: async () => {
            const real = await p.users();
            return {
              ...real,
              async applyBest(group, inst) {
                applyCalls++;
                await real.applyBest(group, inst);
                if (!crashed && inst.id === 'inst-0') {
                  crashed = true;
                  throw new TransientError('worker died after applying the user-state update');
                }
              },
            };
          },
        }),
      },
    );
    expect(r.outcome).toMatchObject({ kind: 'done', step: 1, total: 1 });
    expect(crashed).toBe(true);
    // Two groups, one crash: applyBest ran for each group once, and the retry skipped it.
    expect(applyCalls).toBe(2);
    expect(logs.join('\n')).toMatch(/user-state update found applied before a crash; not applying it again/);
    expect(r.metrics.map((m) => m.groups)).toEqual([2]);
    // The synthetic update appends one memory per applied group (the policy always STOPs);
    // the run's Redis keys are gone, its user-state dump after update 1 holds the states.
    const dump = readFileSync(runLayout(join(root, 'retry')).stepStates(1), 'utf8')
      .split('\n')
      .filter(Boolean);
    const states = dump.map((line) => JSON.parse(line) as UserState);
    expect(Object.fromEntries(states.map((s) => [s.userId, s.memories.length]))).toEqual({ 'user-0': 1, 'user-1': 1 });
  }, 60_000);
});
