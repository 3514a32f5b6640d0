// E2E on a real Redis Cluster (issue 35 item 4): three masters of Debian's redis-server
// started by the test itself (tests/helpers/redis-cluster.ts). The e2e run (real
// processes, synthetic parts) on the cluster gives the same rewards and the same adapter
// bytes as the same run on one Redis, and leaves no key behind on any master; a prefix
// without a hash tag is refused before anything starts; key deletion visits every master.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunConfigSchema } from '../../configs/schema.ts';
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
  await deletePrefixedKeys(`{${many.prefix}}`, cluster.url).catch(() => undefined);
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

  it('refuses a cluster URL whose queue prefix has no hash tag, naming the fix', () => {
    const r = RunConfigSchema.safeParse({ queues: { redisUrl: cluster.url, prefix: 'gsteer' } });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(/no hash tag.*CROSSSLOT.*"\{gsteer\}"/);
    expect(RunConfigSchema.safeParse({ queues: { redisUrl: cluster.url, prefix: '{gsteer}' } }).success).toBe(true);
  });

  it('the e2e run on the cluster gives the same rewards and adapter bytes as on one Redis', async () => {
    const prefix = `{${many.prefix}}`;
    const ra = cli(['train', '--config', writeConfig(one.dir, e2eConfig(one, 'clu'))]);
    const rb = cli(['train', '--config', writeConfig(many.dir, e2eConfig(many, 'clu', { queues: { prefix, redisUrl: cluster.url, backoffMs: 200 } }))]);
    const [xa, xb] = await Promise.all([ra.done, rb.done]);
    expect(xa.code, xa.stderr).toBe(0);
    expect(xb.code, xb.stderr).toBe(0);
    const runA = join(one.dir, 'runs', 'clu');
    const runB = join(many.dir, 'runs', 'clu');
    const ma = reproducibleMetrics(runA);
    expect(ma.map((r) => r.step)).toEqual([1, 2, 3, 4]);
    expect(reproducibleMetrics(runB)).toEqual(ma);
    expect(adapterBytes(runB, 4).equals(adapterBytes(runA, 4))).toBe(true);
    expect(adapterBytes(runB, 4).equals(adapterBytes(runB, 3))).toBe(false); // it trained
    // The run removed its own keys from whichever master holds its slot.
    const redis = connect(cluster.url);
    try {
      expect(await clusterKeys(redis, `${globEscape(prefix)}:*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  }, 150_000);
});
