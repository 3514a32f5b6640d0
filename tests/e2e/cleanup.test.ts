// E2E (real Redis, real processes, synthetic parts): a run leaves no key in Redis. A finished
// run removes its own keys (queues, user states, metrics stream); a run SIGKILLed mid-way
// leaves them (all under its run prefix <prefix>:{<runId>}), `gsteer clean RUN_DIR` removes
// exactly those (keys planted outside the run, under and outside its prefix, stay), and
// `gsteer resume` from the run directory alone then ends byte-identical to the finished run,
// again leaving nothing behind.
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { adapterBytes, cli, e2eConfig, killRun, metricLines, removeRuns, reproducibleMetrics, tempRun, waitFor, writeConfig } from './helpers.ts';
import { globEscape } from '../../util/redis-keys.ts';
import { queuePrefix } from '../../checkpoints/run-keys.ts';
import { readRunInfo } from '../../checkpoints/run-info.ts';
import { runLayout } from '../../checkpoints/layout.ts';

const ref = tempRun('cln-ref');
const k = tempRun('cln-kill');
k.instances = ref.instances;
const over = { grpo: { maxUpdates: 4, learningRate: 0.1, groupsPerUpdate: 2, maxPolicyLag: 0 }, checkpoint: { every: 2, keep: 2 } };
const env = { GSTEER_SYNTHETIC_TRAIN_MS: '300' };
const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
// Planted around the killed run's keys: another run under the same prefix (its id extends the
// killed run's id), a longer prefix, a key without it.
const planted = [`${k.prefix}:{cln-another}:run:users`, `${k.prefix}x:rollouts:keep`, `keep-${k.prefix}:groups:1`];

afterAll(async () => {
  for (const key of planted) await redis.del(key);
  redis.disconnect();
  await removeRuns(ref, k);
});

async function keysUnder(prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${globEscape(prefix)}*`, 'COUNT', 500);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out.sort();
}

describe('e2e: a run cleans up its Redis keys', () => {
  it('finished: none left; killed: gsteer clean removes them and nothing else; resume still byte-identical', async () => {
    const runRef = join(ref.dir, 'runs', 'cln');
    const runK = join(k.dir, 'runs', 'cln');
    for (const key of planted) await redis.set(key, '1');
    const r = cli(['train', '--config', writeConfig(ref.dir, e2eConfig(ref, 'cln', over))], env);
    const killed = cli(['train', '--config', writeConfig(k.dir, e2eConfig(k, 'cln', over))], env);
    await waitFor(() => metricLines(runK) >= 3, 60_000, 'update 3 of the run to kill (checkpoint 2 written)');
    killRun(killed);
    expect((await killed.done).signal).toBe('SIGKILL');

    const x = await r.done;
    expect(x.code, x.stderr).toBe(0);
    expect(reproducibleMetrics(runRef).map((m) => m.step)).toEqual([1, 2, 3, 4]);
    expect(await keysUnder(`${ref.prefix}:`)).toEqual([]);

    // The killed run left its queues and user states (a live run has them too), all under its run prefix.
    const qp = queuePrefix(k.prefix, readRunInfo(runLayout(runK)).runId);
    expect(qp.slice(k.prefix.length)).toMatch(/^:\{cln-[0-9a-f]{8}\}$/); // the run id, unique per run, as a hash tag
    const left = (await keysUnder(`${k.prefix}:`)).filter((key) => !planted.includes(key));
    expect(left.every((key) => key.startsWith(`${qp}:`))).toBe(true);
    expect(left.filter((key) => key.startsWith(`${qp}:updates:`)).length).toBeGreaterThan(0);
    expect(left.filter((key) => key.startsWith(`${qp}:run:`)).length).toBeGreaterThan(0);
    // Its workers exit with it (child-guard); until BullMQ stops listing them, clean refuses.
    let cleaned = await cli(['clean', runK]).done;
    for (let t = 0; cleaned.code === 2 && /look(s)? alive/.test(cleaned.stderr) && t < 50; t++) cleaned = await cli(['clean', runK]).done;
    expect(cleaned.code, cleaned.stderr).toBe(0);
    // (not exactly left.length: BullMQ's own short-lived keys, e.g. the stalled-check lock, may expire meanwhile)
    expect(cleaned.stdout).toMatch(/removed [1-9]\d* key\(s\) of run cln-[0-9a-f]{8} \(prefix /);
    expect(await keysUnder(`${k.prefix}`)).toEqual(planted.slice(0, 2).sort());
    expect(await redis.get(planted[2]!)).toBe('1');

    const resumed = await cli(['resume', runK], env).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(reproducibleMetrics(runK)).toEqual(reproducibleMetrics(runRef));
    expect(adapterBytes(runK, 4).equals(adapterBytes(runRef, 4))).toBe(true);
    expect(await keysUnder(`${k.prefix}`)).toEqual(planted.slice(0, 2).sort());
  }, 180_000);
});
