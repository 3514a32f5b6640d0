// Supervisor restarts of a run's processes, counted from the run's logs: the supervisor
// writes a RESTART_MARK line into a child's log (RUN/logs/<name>.log) each time it restarts
// it, and the logs are appended to across resumes, so the count never goes back. Each file
// is read on from where the last count stopped.
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RESTART_MARK } from '../../checkpoints/layout.ts';

interface FileCount {
  offset: number;
  count: number;
  carry: string; // a line not finished at the last read
}

export class RestartCounter {
  private readonly files = new Map<string, FileCount>();

  constructor(private readonly logsDir: string) {}

  count(): number {
    if (!existsSync(this.logsDir)) return 0;
    let total = 0;
    for (const name of readdirSync(this.logsDir)) if (name.endsWith('.log')) total += this.countFile(join(this.logsDir, name));
    return total;
  }

  private countFile(path: string): number {
    const size = statSync(path).size;
    let f = this.files.get(path) ?? { offset: 0, count: 0, carry: '' };
    if (size < f.offset) f = { offset: 0, count: 0, carry: '' }; // replaced, not appended to: count again
    if (size > f.offset) {
      const buf = Buffer.alloc(size - f.offset);
      const fd = openSync(path, 'r');
      try {
        readSync(fd, buf, 0, buf.length, f.offset);
      } finally {
        closeSync(fd);
      }
      const lines = (f.carry + buf.toString('utf8')).split('\n');
      const carry = lines.pop() ?? '';
      f = { offset: size, count: f.count + lines.filter((l) => l.includes(RESTART_MARK)).length, carry };
    }
    this.files.set(path, f);
    return f.count;
  }
}
