// One run directory the dashboard serves: its config, run.json and per-update records, kept
// live from two sources. The Redis metrics stream (XREAD BLOCK on a connection of its own)
// brings each update as the controller records it; metrics.jsonl is watched too (a stat
// every second, a read when it changed), which keeps a run live when its Redis is gone and
// is all there is for a finished run. Events: 'update' (one record appended), 'reset'
// (anything else: a resume cut the file back), 'live' (the source changed).
import { EventEmitter } from 'node:events';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { runLayout, type RunLayout } from '../../checkpoints/layout.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { InputError } from '../../util/errors.ts';
import { readRunConfig } from '../../configs/load.ts';
import { connect, type RedisClient } from '../../util/redis.ts';
import { metricsStreamKey } from '../../checkpoints/run-keys.ts';
import { readRunInfo, type RunInfo } from '../../checkpoints/run-info.ts';
import type { MetricsRecord } from '../sink.ts';
import { isPrefix, mergeRecord, parseMetricsText } from './records.ts';

export type LiveSource = 'redis' | 'file';

/** Run names as URLs carry them: what run.json allows for run ids. */
export const RUN_NAME = /^[A-Za-z0-9._-]+$/;
const FILE_POLL_MS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A connection for the dashboard: a command fails after one reconnect attempt instead of
 * waiting for Redis (callers check `status` first), and it keeps reconnecting quietly, so
 * a run whose Redis comes up later (launchRun may start one) goes live.
 */
export function dashboardRedis(url: string): RedisClient {
  const r = connect(url, { maxRetriesPerRequest: 1, retryStrategy: (n: number) => Math.min(500 * n, 5000) });
  r.on('error', () => undefined);
  return r;
}

export class ServedRun extends EventEmitter {
  readonly name: string;
  readonly layout: RunLayout;
  readonly cfg: RunConfig;
  readonly info: RunInfo;
  records: MetricsRecord[] = [];
  live: LiveSource = 'file';
  private conn: RedisClient | null = null;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private fileStamp = '';
  private readonly reported = new Set<string>();

  constructor(
    dir: string,
    private readonly log: (msg: string) => void,
  ) {
    super();
    this.setMaxListeners(0); // three per open page
    this.layout = runLayout(resolve(dir));
    this.name = basename(this.layout.root);
    if (!RUN_NAME.test(this.name) || this.name === '.' || this.name === '..')
      throw new InputError(`run directory ${dir}: its name "${this.name}" is not a URL-safe run name (letters, digits, . _ -); rename the directory`);
    if (!existsSync(this.layout.config))
      throw new InputError(`${this.layout.config} not found; ${dir} is not a gsteer run directory (start one with gsteer train)`);
    this.cfg = readRunConfig(this.layout.config, { keepUnset: true }); // a reader needs none of the run's secrets
    this.info = readRunInfo(this.layout);
  }

  get streamKey(): string {
    return metricsStreamKey(this.cfg.queues.prefix, this.info.runId);
  }

  /** Read the file, watch it, and (unless `stream` is false) follow the Redis stream. */
  start(stream = true): void {
    this.syncFromFile();
    // A read that fails (the file replaced mid-read) is tried again at the next tick; it must
    // never throw out of the timer (in `gsteer train --dashboard` that would end the run).
    this.timer = setInterval(() => {
      try {
        this.syncFromFile();
      } catch (e) {
        this.report(`${this.layout.metrics}: ${(e as Error).message}; trying again`);
        this.fileStamp = '';
      }
    }, FILE_POLL_MS);
    if (!stream) return;
    this.conn = dashboardRedis(this.cfg.queues.redisUrl);
    this.conn.on('close', () => this.setLive('file'));
    void this.follow(this.conn);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.conn?.disconnect();
    this.removeAllListeners();
  }

  private setLive(source: LiveSource): void {
    if (this.live === source) return;
    this.live = source;
    this.emit('live', source);
  }

  private apply(rec: MetricsRecord): void {
    const next = mergeRecord(this.records, rec);
    if (!next) return;
    const appended = next.length === this.records.length + 1;
    this.records = next;
    if (appended) this.emit('update', rec);
    else this.emit('reset', next);
  }

  private report(problem: string): void {
    if (this.reported.has(problem)) return;
    this.reported.add(problem);
    this.log(problem);
  }

  /** Read metrics.jsonl when its size or mtime changed. */
  syncFromFile(): void {
    let stamp = 'missing';
    try {
      const st = statSync(this.layout.metrics);
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      // no metrics yet
    }
    if (stamp === this.fileStamp) return;
    this.fileStamp = stamp;
    const text = stamp === 'missing' ? '' : readFileSync(this.layout.metrics, 'utf8');
    const { records, problems } = parseMetricsText(text, this.layout.metrics);
    for (const p of problems) this.report(p);
    if (isPrefix(this.records, records)) {
      for (const r of records.slice(this.records.length)) this.apply(r);
      return;
    }
    // The file holds less than we do: the stream ran ahead of a slow (shared) filesystem, or
    // a resume cut the file back. While the stream is live it settles both (mergeRecord);
    // without it, the file is the record.
    if (this.live === 'redis' && isPrefix(records, this.records)) return;
    this.records = records;
    this.emit('reset', records);
  }

  /** XREAD BLOCK from the stream's end; after each (re)connect the file is read again first. */
  private async follow(conn: RedisClient): Promise<void> {
    let last: string | null = null;
    while (!this.closed) {
      try {
        if (conn.status !== 'ready') {
          last = null;
          await sleep(250);
          continue;
        }
        if (last === null) {
          // Records up to the stream's newest entry are in the file already (the sink writes it first).
          const top = (await conn.xrevrange(this.streamKey, '+', '-', 'COUNT', 1)) as [string, string[]][];
          last = top[0]?.[0] ?? '0-0';
          this.setLive('redis');
          this.fileStamp = '';
          this.syncFromFile();
        }
        const res = (await conn.xread('COUNT', 100, 'BLOCK', 1000, 'STREAMS', this.streamKey, last)) as [string, [string, string[]][]][] | null;
        for (const [, entries] of res ?? []) {
          for (const [id, fields] of entries) {
            last = id;
            const rec = streamRecord(fields);
            if (rec) this.apply(rec);
            else this.report(`${this.streamKey} entry ${id}: not a metrics record (field "json" with a JSON object with a numeric "step"); skipped`);
          }
        }
      } catch {
        if (this.closed) return;
        last = null;
        this.setLive('file');
        await sleep(500);
      }
    }
  }
}

/** The record an XADD by monitor/sink.ts carries (`json` field), or null. */
function streamRecord(fields: string[]): MetricsRecord | null {
  const at = fields.indexOf('json');
  try {
    const rec = at >= 0 && at % 2 === 0 ? (JSON.parse(fields[at + 1] ?? '') as unknown) : null;
    return rec && typeof rec === 'object' && typeof (rec as MetricsRecord).step === 'number' ? (rec as MetricsRecord) : null;
  } catch {
    return null;
  }
}
