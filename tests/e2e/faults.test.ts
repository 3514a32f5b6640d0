// E2E (real Redis, real processes, synthetic parts): SIGKILL of a rollout worker mid-job
// and of the trainer mid-update. The supervisor restarts the dead worker and gives the jobs
// it held back to the queue at once (workers/reclaim.ts): the locks here are 10 minutes, longer
// than the test's timeout, so a run that waited for them to expire would fail. The run ends with
// exactly the metrics and adapter of an undisturbed run: nothing lost, nothing counted twice.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  adapterBytes,
  cli,
  e2eConfig,
  logText,
  metricLines,
  reproducibleMetrics,
  sleep,
  tempRun,
  waitFor,
  workerPid,
  writeConfig,
  removeRuns,
} from './helpers.ts';
import { readGroupFile } from '../../checkpoints/group-file.ts';
import { RestartCounter } from '../../monitor/dashboard/restarts.ts';

const ref = tempRun('flt-ref');
const ro = tempRun('flt-rollout');
const tr = tempRun('flt-trainer');
ro.instances = tr.instances = ref.instances;
const over = {
  grpo: { maxUpdates: 4, learningRate: 0.1, groupsPerUpdate: 1, maxPolicyLag: 0 },
  queues: { rolloutLockMs: 600_000, trainerLockMs: 600_000, backoffMs: 200 },
};
const env = { GSTEER_SYNTHETIC_LATENCY_MS: '700', GSTEER_SYNTHETIC_TRAIN_MS: '700' };

afterAll(() => removeRuns(ref, ro, tr));

describe('e2e: worker faults', () => {
  it('a SIGKILLed rollout worker and a SIGKILLed trainer do not change the run', async () => {
    const runs = { ref: join(ref.dir, 'runs', 'flt'), ro: join(ro.dir, 'runs', 'flt'), tr: join(tr.dir, 'runs', 'flt') };
    const pRef = cli(['train', '--config', writeConfig(ref.dir, e2eConfig(ref, 'flt', over))], env).done;
    const pRo = cli(['train', '--config', writeConfig(ro.dir, e2eConfig(ro, 'flt', over))], env).done;
    const pTr = cli(['train', '--config', writeConfig(tr.dir, e2eConfig(tr, 'flt', over))], env).done;

    // Rollout worker: killed while update 2's rollouts wait on the (700 ms) policy server.
    const killRollout = (async () => {
      await waitFor(() => metricLines(runs.ro) >= 1, 60_000, 'update 1 (rollout run)');
      await sleep(250);
      process.kill(workerPid(runs.ro, 'rollout-0') as number, 'SIGKILL');
    })();
    // Trainer: killed inside update 2's (700 ms) step.
    const killTrainer = (async () => {
      await waitFor(() => /update 2: training/.test(logText(runs.tr, 'trainer-0')), 60_000, 'trainer on update 2');
      process.kill(workerPid(runs.tr, 'trainer-0') as number, 'SIGKILL');
    })();
    await Promise.all([killRollout, killTrainer]);
    const [xRef, xRo, xTr] = await Promise.all([pRef, pRo, pTr]);
    for (const x of [xRef, xRo, xTr]) expect(x.code, x.stderr).toBe(0);

    expect(xRo.stderr).toMatch(/rollout-0 died \(signal SIGKILL\); restarting/);
    expect(xTr.stderr).toMatch(/trainer-0 died \(signal SIGKILL\); restarting/);
    expect(xRo.stderr).toMatch(/rollout-0: returned [1-4] job\(s\) it held to the queue \(rollouts\//);
    expect(xTr.stderr).toMatch(/trainer-0: returned 1 job\(s\) it held to the queue \(updates\/flt-[0-9a-f]{8}-e0-s000002\)/); // <runName>-<8 hex>: the run id
    expect(logText(runs.tr, 'trainer-0')).toMatch(/trainer restored adapter version 1/);
    // The run directories keep the restarts (gsteer_restarts_total): one each, none in the reference.
    expect([runs.ref, runs.ro, runs.tr].map((r) => new RestartCounter(join(r, 'logs')).count())).toEqual([0, 1, 1]);

    const mRef = reproducibleMetrics(runs.ref);
    expect(mRef.map((m) => m.step)).toEqual([1, 2, 3, 4]);
    expect(reproducibleMetrics(runs.ro)).toEqual(mRef);
    expect(reproducibleMetrics(runs.tr)).toEqual(mRef);
    // Every group holds exactly G trajectories, one per index.
    for (let s = 1; s <= 4; s++) {
      const g = readGroupFile(join(runs.ro, 'groups', `s${String(s).padStart(6, '0')}-g0.json`));
      expect(g.trajPaths).toEqual([0, 1, 2, 3].map((i) => join('trajectories', g.groupId, `t${i}.json`)));
    }
    expect(adapterBytes(runs.ro, 4).equals(adapterBytes(runs.ref, 4))).toBe(true);
    expect(adapterBytes(runs.tr, 4).equals(adapterBytes(runs.ref, 4))).toBe(true);
  }, 120_000);
});
