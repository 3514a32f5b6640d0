// An endpoint that stays down mid-run (every rollout fails after its retries) must fail the
// run with the endpoint's message, not "complete" on empty updates.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../configs/load.ts';
import { TransientError } from '../../util/errors.ts';
import { runInProcess } from '../../workers/synthetic/in-process.ts';
import { instance, removeRuns } from '../e2e/helpers.ts';

const root = mkdtempSync(join(tmpdir(), 'gsteer-down-'));
const prefix = `gsteer-test:down:${Math.random().toString(16).slice(2, 10)}`;
afterAll(() => removeRuns({ dir: root, prefix }));

describe('endpoint down mid-run', () => {
  it('stops as failed after two updates whose every group was dropped, naming the URL', async () => {
    const cfg = resolveConfig({
      runName: 'down',
      runDir: root,
      data: { instances: ['unused.jsonl'] },
      policy: { server: 'external', baseUrl: 'http://127.0.0.1:1/v1' },
      rollout: { groupSize: 2 },
      grpo: { maxUpdates: 5, passes: 5 },
      queues: { prefix, attempts: 2, backoffMs: 20, pollMs: 20 },
    });
    const down = 'policy server http://127.0.0.1:9/v1/completions failed after 4 attempt(s): connect ECONNREFUSED';
    const r = await runInProcess(
      cfg,
      [instance(0)].map((i) => ({ ...i, targets: i.targets.map((t) => ({ ...t, lateActivatable: false })) })),
      {
        latencyMs: 0,
        parts: (p) => ({
          ...p,
          rollout: async () => ({
            close: async () => {},
            run: async () => {
              throw new TransientError(down);
            },
          }),
        }),
      },
    );
    expect(r.outcome.kind).toBe('failed');
    expect(r.outcome.step).toBe(2);
    expect(r.outcome.message).toContain('every group of the last 2 updates was dropped');
    expect(r.outcome.message).toContain('http://127.0.0.1:9/v1/completions');
    expect(r.metrics.map((m) => m.groups_dropped)).toEqual([1, 1]);
  }, 30_000);
});
