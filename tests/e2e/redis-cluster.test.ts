// E2E on a real Redis Cluster (issue 35 item 4): three masters of Debian's redis-server
// started by the test itself (tests/helpers/redis-cluster.ts). The e2e run (real
// processes, synthetic parts) on the cluster gives the same rewards and the same adapter
// bytes as the same run on one Redis, every key of it on one master (the run id's hash tag,
// util/redis-keys.ts runKeyPrefix), and leaves no key behind; key deletion visits every master.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, deleteMatching, deletePrefixedKeys, globEscape, type RedisClient } from '../../util/redis.ts';
import { startRedisCluster, type LocalCluster } from '../helpers/redis-cluster.ts';
import { adapterBytes, cli, e2eConfig, removeRuns, reproducibleMetrics, tempRun, writeConfig } from './helpers.ts';

let cluster: LocalCluster;
const one = tempRun('clu-one');
const many = tempRun('clu-many');
many.instances = one.instances;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
}, 90_000);

afterAll(async () => {
  await deletePrefixedKeys(many.prefix, cluster.url).catch(() => undefined);
  await removeRuns(one, many);
  await cluster?.stop();
});

/** Keys on every master of the cluster that match the pattern. */
async function clusterKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const out: string[] = [];
  for (const node of (redis as Cluster).nodes('master')) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      out.push(...keys);
    } while (cursor !== '0');
  }
  return out;
}

describe('Redis Cluster', () => {
  it('is a real three-master cluster, and deleting a pattern reaches keys on every master', async () => {
    const redis = connect(cluster.url);
    try {
      expect(redis).toBeInstanceOf(Cluster);
      await redis.ping(); // connected: the slot map is read
      const info = String(await (redis as Cluster).nodes('master')[0]!.call('CLUSTER', 'INFO'));
      expect(info).toMatch(/cluster_state:ok/);
      expect(info).toMatch(/cluster_size:3/);
      // Keys without a hash tag spread over the slots, so over the three masters.
      const base = `gsteer-test:cluster-del:${randomBytes(4).toString('hex')}`;
      const keys = Array.from({ length: 60 }, (_, i) => `${base}:k${i}`);
      await Promise.all(keys.map((k) => redis.set(k, '1')));
      const perMaster = await Promise.all((redis as Cluster).nodes('master').map((n) => n.dbsize()));
      expect(perMaster.filter((n) => n > 0).length).toBe(3);
      expect(await deleteMatching(redis, [`${base}:*`])).toBe(60);
      expect(await clusterKeys(redis, `${base}:*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('the e2e run on the cluster gives the same rewards and adapter bytes as on one Redis', async () => {
    const prefix = many.prefix; // no tag of its own: the run id's braces are the run's hash tag
    const ra = cli(['train', '--config', writeConfig(one.dir, e2eConfig(one, 'clu'))]);
    const rb = cli(['train', '--config', writeConfig(many.dir, e2eConfig(many, 'clu', { queues: { prefix, redisUrl: cluster.url, backoffMs: 200 } }))]);
    // While it runs: which masters hold keys of the run (all in its slot, so one master).
    const watch = connect(cluster.url);
    const holders = new Set<number>();
    let seen = 0;
    let running = true;
    const poll = (async () => {
      await watch.ping();
      while (running) {
        for (const [m, node] of (watch as Cluster).nodes('master').entries()) {
          const [, keys] = await node.scan('0', 'MATCH', `${globEscape(prefix)}:*`, 'COUNT', 1000);
          if (keys.length) holders.add(m), (seen = Math.max(seen, keys.length));
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const [xa, xb] = await Promise.all([ra.done, rb.done]);
    running = false;
    await poll;
    watch.disconnect();
    expect(xa.code, xa.stderr).toBe(0);
    expect(xb.code, xb.stderr).toBe(0);
    const runA = join(one.dir, 'runs', 'clu');
    const runB = join(many.dir, 'runs', 'clu');
    const ma = reproducibleMetrics(runA);
    expect(ma.map((r) => r.step)).toEqual([1, 2, 3, 4]);
    expect(reproducibleMetrics(runB)).toEqual(ma);
    expect(adapterBytes(runB, 4).equals(adapterBytes(runA, 4))).toBe(true);
    expect(adapterBytes(runB, 4).equals(adapterBytes(runB, 3))).toBe(false); // it trained
    expect(seen).toBeGreaterThan(0);
    expect(holders.size).toBe(1);
    // The run removed its own keys from whichever master holds its slot.
    const redis = connect(cluster.url);
    try {
      expect(await clusterKeys(redis, `${globEscape(prefix)}:*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  }, 150_000);
});
