// One owner per run directory: `gsteer train`, `resume` and `clean` hold RUN/run.lock while
// they work on a run, so a second command on a live run is refused with its owner named
// instead of cutting its metrics, deleting its adapters or its Redis keys. The lock is a
// file created exclusively (O_EXCL) holding {pid, host, startedAt, command, procStart}. A
// lock whose owner is gone is stale and taken over: on this host, a pid that no longer runs,
// or that runs a process started later than the lock's owner (a reused pid, Linux
// /proc/<pid>/stat start time); another host's lock cannot be checked from here, so it is
// refused with the file to remove once that process is known to be gone.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { InputError } from '../util/errors.ts';
import { isRunning } from '../util/pid.ts';

export const LOCK_FILE = 'run.lock';

export interface LockOwner {
  pid: number;
  host: string;
  startedAt: string;
  /** The gsteer command holding it (train, resume, clean). */
  command: string;
  /** The process's start time in clock ticks since boot (Linux), to tell a reused pid; null elsewhere. */
  procStart: number | null;
}

/** Start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat), or null. */
function procStartOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) is in parentheses and may hold spaces: count after the last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const v = Number(fields[19]);
    return Number.isFinite(v) ? v : null;
  } catch {
    return null;
  }
}

/** alive, stale (its process is gone), or unknown (another host: cannot be checked from here). */
export function ownerState(o: LockOwner): 'alive' | 'stale' | 'unknown' {
  if (o.host !== hostname()) return 'unknown';
  if (!isRunning(o.pid)) return 'stale';
  const now = procStartOf(o.pid);
  return o.procStart !== null && now !== null && now !== o.procStart ? 'stale' : 'alive';
}

export function readLock(root: string): LockOwner | null {
  try {
    return JSON.parse(readFileSync(join(root, LOCK_FILE), 'utf8')) as LockOwner;
  } catch {
    return null;
  }
}

/** "gsteer train (pid 123 on host h, since 2026-...)" */
export const describeOwner = (o: LockOwner) => `gsteer ${o.command} (pid ${o.pid} on host ${o.host}, since ${o.startedAt})`;

export interface RunLock {
  readonly file: string;
  release(): void;
}

function refusal(root: string, o: LockOwner, state: 'alive' | 'unknown'): InputError {
  const file = join(root, LOCK_FILE);
  return new InputError(
    state === 'alive'
      ? `${root} is in use by ${describeOwner(o)}; wait for it to finish or stop it first (Ctrl-C in its terminal, or kill ${o.pid})`
      : `${root} is in use by ${describeOwner(o)}, which cannot be checked from ${hostname()}; stop it there, or once that process is gone remove ${file}`,
  );
}

/**
 * Take RUN/run.lock for `command`, or throw InputError naming the live owner. A stale lock
 * is moved aside (one taker wins the rename) and taken. Released by release() or when the
 * process exits.
 */
export function acquireRunLock(root: string, command: string): RunLock {
  mkdirSync(root, { recursive: true });
  const file = join(root, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), command, procStart: procStartOf(process.pid) };
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, 'wx', 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = readLock(root);
      if (!owner) continue; // being written right now, or torn: look again
      const state = ownerState(owner);
      if (state !== 'stale') throw refusal(root, owner, state);
      const aside = `${file}.stale-${randomBytes(4).toString('hex')}`;
      try {
        renameSync(file, aside);
        rmSync(aside, { force: true });
      } catch {
        // another process took it over first: look again
      }
      continue;
    }
    try {
      writeSync(fd, `${JSON.stringify(me)}\n`);
    } finally {
      closeSync(fd);
    }
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      process.off('exit', release);
      if (readLock(root)?.pid === me.pid && existsSync(file)) rmSync(file, { force: true });
    };
    process.on('exit', release);
    return { file, release };
  }
  throw new InputError(`${file}: could not take the run lock (another command keeps taking it); try again`);
}

/** Throw (naming the owner) when another live command holds the run; a stale, absent or own lock passes. */
export function checkNotLocked(root: string): void {
  const owner = readLock(root);
  if (!owner || (owner.pid === process.pid && owner.host === hostname())) return;
  const state = ownerState(owner);
  if (state !== 'stale') throw refusal(root, owner, state);
}
