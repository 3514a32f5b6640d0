// Whether a process of this host still runs, for the owner checks of locks, queue claims and
// temp files (a pid that answers signal 0, or one we may not signal: EPERM means it exists).
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
