// Stragglers and staleness by design (issue 35 item 2; method §5.7, §5.12), with the whole
// pipeline in one process on the real Redis (workers/synthetic/in-process.ts: BullMQ flows,
// rollout / group / trainer workers, the controller, the synthetic policy server on HTTP):
//   - a stalled episode cannot hold its update past grpo.groupDeadlineMs: its group is
//     dropped as late, the episode is cancelled, the update trains on the other group;
//   - pacing keeps the lag bound without discarding: each adapter version has exactly one
//     update's worth of episodes started under it, and every one of them is trained;
//   - a rollout that spans an update finishes on the adapter it started with, and its
//     tokens say so.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../configs/load.ts';
import { readGroupFile } from '../../checkpoints/group-file.ts';
import { parseTurn } from '../../structured/turn/grammar.ts';
import type { Trajectory } from '../../core/types.ts';
import type { Instance } from '../../data/schema.ts';
import { OpenAIPolicyClient } from '../../rollout/policy-client.ts';
import { runInProcess } from '../../workers/synthetic/in-process.ts';
import type { Parts, RolloutPart } from '../../workers/parts.ts';
import { removeRuns } from '../e2e/helpers.ts';
import { readFileSync } from 'node:fs';

const root = mkdtempSync(join(tmpdir(), 'gsteer-stragglers-'));
const prefix = `gsteer-test:stragglers:${Math.random().toString(16).slice(2, 10)}`;
afterAll(() => removeRuns({ dir: root, prefix }));
afterEach(() => {
  delete process.env.GSTEER_SYNTHETIC_TRAIN_MS;
});

const instances: Instance[] = Array.from({ length: 12 }, (_, k) => ({
  id: `b${k}`,
  userId: `u${k}`,
  taskId: 't',
  split: 'train',
  query: `straggler query ${k}`,
  profile: '',
  persona: [],
  targets: [{ id: 't', description: 'd', seedQuestion: 'q', seedAnswer: 'a', weight: 1, essential: true, lateActivatable: false }],
  edges: [],
}));

function config(name: string, grpo: Record<string, unknown>, concurrency = 16) {
  return resolveConfig({
    runName: name,
    runDir: root,
    seed: 5,
    data: { instances: ['unused.jsonl'] },
    policy: { server: 'external', baseUrl: 'http://127.0.0.1:1/v1' },
    rollout: { groupSize: 4, concurrency, workers: 1 },
    grpo: { learningRate: 0.05, passes: 10, ...grpo },
    checkpoint: { every: 1000, keep: 1 },
    queues: { prefix: `${prefix}:${name}`, pollMs: 20, backoffMs: 50 },
  });
}

/** The synthetic parts with the rollout part wrapped by `wrap`. */
const wrapped =
  (wrap: (real: RolloutPart) => RolloutPart['run']) =>
  (p: Parts): Parts => ({
    ...p,
    rollout: async () => {
      const real = await p.rollout();
      return { close: real.close, run: wrap(real) };
    },
  });

const num = (x: unknown) => x as number;

describe('stragglers and staleness', () => {
  it('a stalled episode does not hold its update past grpo.groupDeadlineMs: its group is dropped as late and the episode cancelled', async () => {
    const order: string[] = [];
    let aborted = false;
    const cfg = config('deadline', { groupsPerUpdate: 2, maxUpdates: 3, maxPolicyLag: 0, groupDeadlineMs: 1500 });
    const r = await runInProcess(cfg, instances, {
      latencyMs: 20,
      trace: (event, step) => event === 'recorded' && order.push(`recorded-${step}`),
      parts: wrapped((real) => async (ctx) => {
        if (ctx.job.groupId === 's000002-g1' && ctx.job.index === 0) {
          // Stalls 25 s (an endpoint that never answers in time), unless cancelled first.
          await new Promise<void>((resolve) => {
            const natural = setTimeout(() => (order.push('stall-ended-by-itself'), resolve()), 25_000);
            ctx.signal?.addEventListener('abort', () => ((aborted = true), clearTimeout(natural), resolve()));
          });
        }
        return real.run(ctx);
      }),
    });
    expect(r.outcome.kind).toBe('done');
    // Update 2 was trained and recorded while the stalled episode would still be stalled.
    expect(order).toEqual(['recorded-1', 'recorded-2', 'recorded-3']);
    expect(aborted).toBe(true);
    const m = r.metrics;
    expect(m.map((x) => [x.groups, x.groups_late, x['episodes/cancelled_late'], x.trajectories, x['episodes/started']])).toEqual([
      [2, 0, 0, 8, 8],
      [1, 1, 1, 4, 8], // the late group: 1 episode cancelled, its 3 finished ones dropped with it
      [2, 0, 0, 8, 8],
    ]);
    const late = readGroupFile(join(root, 'deadline', 'groups', 's000002-g1.json'));
    expect(late).toMatchObject({ dropped: true, late: 1, applied: false });
    expect(late.reason).toMatch(/^late: 1 of 4 episodes unfinished 1500 ms after the first group of update 2 finished/);
  }, 60_000);

  it('pacing by policy version keeps the lag bound and discards nothing: started = trained per version', async () => {
    process.env.GSTEER_SYNTHETIC_TRAIN_MS = '150';
    const L = 2;
    const B = 8; // episodes per update: 2 groups x 4
    const started = new Map<number, number>();
    let loaded = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    let maxLagAtStart = 0;
    const cfg = config('pacing', { groupsPerUpdate: 2, maxUpdates: 6, maxPolicyLag: L }, (L + 1) * B);
    const r = await runInProcess(cfg, instances, {
      latencyMs: 60,
      trace: (event, step) => event === 'loaded' && (loaded = Math.max(loaded, step)),
      parts: wrapped((real) => async (ctx) => {
        const v = ctx.job.policyVersion;
        started.set(v, (started.get(v) ?? 0) + 1);
        maxLagAtStart = Math.max(maxLagAtStart, loaded - v); // newest trained version vs the sampling one
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        try {
          return await real.run(ctx);
        } finally {
          inFlight--;
        }
      }),
    });
    expect(r.outcome.kind).toBe('done');
    const m = r.metrics;
    // Every version used has exactly one update's worth of episodes started under it, and all were trained.
    const used = new Map<number, number>();
    for (const x of m) {
      expect(x['policy_version/sampled_min']).toBe(x['policy_version/sampled_max']);
      const v = num(x['policy_version/sampled_min']);
      used.set(v, (used.get(v) ?? 0) + num(x.trajectories));
      expect(num(x['policy_lag/max'])).toBeLessThanOrEqual(L);
      expect(x['episodes/started']).toBe(x.trajectories);
    }
    expect([...started.entries()].sort()).toEqual([...used.entries()].sort());
    // Version 0 samples updates 1 .. L + 1 (versionFor); every later version exactly one update.
    expect([...started.entries()].sort()).toEqual([
      [0, (L + 1) * B],
      [1, B],
      [2, B],
      [3, B],
    ]);
    expect(m.map((x) => x.policy_lag)).toEqual([0, 1, 2, 2, 2, 2]);
    // Bounded, and not vacuous: more than one update's episodes were in flight at once.
    expect(maxLagAtStart).toBeLessThanOrEqual(L);
    expect(maxInFlight).toBeGreaterThan(B);
    expect(maxInFlight).toBeLessThanOrEqual((L + 1) * B);
  }, 60_000);

  it('a rollout that spans an update finishes on the adapter it started with, and its tokens carry that version', async () => {
    process.env.GSTEER_SYNTHETIC_TRAIN_MS = '200';
    const cfg = config('span', { groupsPerUpdate: 1, maxUpdates: 4, maxPolicyLag: 1 });
    let spanned: { version: number; seeds: [number, number] } | null = null;
    const r = await runInProcess(cfg, instances, {
      latencyMs: 20,
      recordEvents: true,
      parts: wrapped((real) => async (ctx) => {
        const first = await real.run(ctx);
        if (ctx.job.step !== 3 || ctx.job.index !== 0) return first;
        // A second turn, asked only once the next adapter version is loaded: the episode spans an update.
        const v = ctx.job.policyVersion;
        for (let t = 0; t < 300; t++) {
          const models = (await (await fetch(`${ctx.policyUrl}/models`)).json()) as { data: { id: string }[] };
          if (models.data.some((d) => d.id === `policy-v${v + 1}`)) break;
          await new Promise((res) => setTimeout(res, 20));
        }
        const seed = ctx.job.seed ^ 0x5a5a;
        const client = new OpenAIPolicyClient({ baseUrl: ctx.policyUrl, timeoutMs: 10_000, maxRetries: 0 });
        const promptIds = [...first.turns[0]!.tokens.promptIds, ...first.turns[0]!.tokens.completionIds];
        const res = await client.complete({ promptIds, maxTokens: 6, temperature: 1, topP: 1, seed, model: ctx.job.model });
        spanned = { version: v, seeds: [ctx.job.seed, seed] };
        return {
          ...first,
          turns: [
            ...first.turns,
            {
              index: 1,
              tokens: { promptIds, completionIds: res.completionIds, logprobs: res.logprobs },
              completionText: res.text,
              parsed: parseTurn(res.text),
              observation: { kind: 'none' },
            },
          ],
        };
      }),
    });
    expect(r.outcome.kind).toBe('done');
    expect(spanned).not.toBeNull();
    const { version, seeds } = spanned!;
    expect(version).toBe(1); // update 3 samples version 3 - 1 - lag 1
    // The server's log: turn 1 by policy-v1, then policy-v2 loaded, then turn 2 still by policy-v1.
    const at = (pred: (e: (typeof r.events)[number]) => boolean) => r.events.findIndex(pred);
    const turn1 = at((e) => e.kind === 'complete' && e.seed === seeds[0]);
    const turn2 = at((e) => e.kind === 'complete' && e.seed === seeds[1]);
    const load2 = at((e) => e.kind === 'load' && e.model === 'policy-v2');
    expect(turn1).toBeGreaterThanOrEqual(0);
    expect(turn1).toBeLessThan(load2);
    expect(load2).toBeLessThan(turn2);
    expect([r.events[turn1]!.model, r.events[turn2]!.model]).toEqual(['policy-v1', 'policy-v1']);
    // Every token of the episode carries version 1; the update trained it at lag 1.
    const traj = JSON.parse(readFileSync(join(root, 'span', 'trajectories', 's000003-g0', 't0.json'), 'utf8')) as Trajectory;
    expect(traj.turns.map((t) => t.tokens.policyVersion)).toEqual([1, 1]);
    const m3 = r.metrics[2]!;
    expect([m3['policy_version/sampled_min'], m3['policy_version/sampled_max'], m3['policy_lag/max']]).toEqual([1, 1, 1]);
  }, 60_000);
});
