// What the fleet bench samples while a leg runs: CPU seconds of processes (from
// /proc/<pid>/stat, utime + stime), the process tree of `gsteer train`, and each Redis
// node's INFO (memory, commands processed, its own pid).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** utime + stime of a process in seconds (0 once it is gone). */
export function cpuSeconds(pid: number): number {
  const f = `/proc/${pid}/stat`;
  if (!existsSync(f)) return 0;
  try {
    // Fields after the command name (which may hold spaces) start at ") ".
    const rest = readFileSync(f, 'utf8').split(') ')[1]!.split(' ');
    return (Number(rest[11]) + Number(rest[12])) / TICKS; // fields 14, 15 of proc(5)
  } catch {
    return 0;
  }
}

const ppidOf = (pid: number) => {
  try {
    return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
  } catch {
    return -1;
  }
};

/** Direct children of a process, with their command lines. */
export function children(pid: number): { pid: number; cmd: string }[] {
  const out: { pid: number; cmd: string }[] = [];
  for (const name of readdirSync('/proc')) {
    const p = Number(name);
    if (!Number.isInteger(p) || ppidOf(p) !== pid) continue;
    try {
      out.push({ pid: p, cmd: readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ') });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The role of a `gsteer train` child from its command line (worker kind and index). */
export function roleOf(cmd: string): string {
  const m = / worker (rollout|group|trainer) /.exec(cmd);
  return m ? (m[1] === 'rollout' ? 'rollout workers' : m[1]!) : 'other';
}

export interface RedisSample {
  usedMemory: number;
  commands: number;
  pid: number;
  /** Calls per command name so far (INFO commandstats). */
  byCommand: Record<string, number>;
}

/** INFO of one Redis node. */
export async function redisSample(port: number): Promise<RedisSample> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
  r.on('error', () => undefined);
  try {
    await r.connect();
    const info = await r.info('everything');
    const field = (k: string) => Number(new RegExp(`^${k}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    const byCommand: Record<string, number> = {};
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) byCommand[m[1]!] = Number(m[2]);
    return { usedMemory: field('used_memory'), commands: field('total_commands_processed'), pid: field('process_id'), byCommand };
  } finally {
    r.disconnect();
  }
}
