// Child processes of a run (workers, the embedded policy server): started with an IPC
// channel and workers/child-guard.mjs preloaded (they exit when we do), logs to RUN/logs/<name>.log, restarted with a bounded
// budget when one dies unexpectedly (a SIGKILLed rollout worker or trainer comes back and
// its jobs go back to the queue at once, workers/reclaim.ts); over budget, `onGiveUp` stops the run.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { RESTART_MARK } from '../checkpoints/layout.ts';

/** Written into the child's log file at each restart: the run directory's record of restarts (gsteer_restarts_total). */

/** The last lines of a child's log, indented (the message when it cannot be kept alive). */
function logTail(file: string, lines = 12): string {
  try {
    return readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .slice(-lines)
      .map((l) => `    ${l}`)
      .join('\n');
  } catch {
    return '    (no log)';
  }
}

export interface ChildSpec {
  name: string;
  args: string[]; // after `node`
  logFile: string;
  env?: NodeJS.ProcessEnv;
}

interface Running {
  spec: ChildSpec;
  proc: ChildProcess;
  restarts: number;
}

export class Supervisor {
  private readonly children = new Map<string, Running>();
  private stopping = false;

  constructor(
    private readonly maxRestarts: number,
    private readonly log: (msg: string) => void,
    private readonly onGiveUp: (msg: string) => void,
    /** A child died unexpectedly (before its restart): e.g. give its jobs back (workers/reclaim.ts). */
    private readonly onDied: (name: string, pid: number) => void = () => {},
  ) {}

  start(spec: ChildSpec, restarts = 0): ChildProcess {
    mkdirSync(dirname(spec.logFile), { recursive: true });
    const out = openSync(spec.logFile, 'a');
    // Own process group (detached): terminal signals go to the controller only (child-guard.mjs).
    const proc = spawn(process.execPath, spec.args, { stdio: ['ignore', out, out, 'ipc'], env: { ...process.env, ...spec.env }, detached: true });
    closeSync(out); // the child has its own copy
    this.children.set(spec.name, { spec, proc, restarts });
    proc.on('exit', (code, signal) => {
      if (this.stopping || this.children.get(spec.name)?.proc !== proc) return;
      const why = signal ? `signal ${signal}` : `exit code ${code}`;
      if (proc.pid !== undefined) this.onDied(spec.name, proc.pid);
      if (restarts >= this.maxRestarts) {
        this.onGiveUp(`${spec.name} died (${why}) and was restarted ${restarts} time(s); its log ${spec.logFile} ends:\n${logTail(spec.logFile)}`);
        return;
      }
      this.log(`${spec.name} died (${why}); restarting (${restarts + 1}/${this.maxRestarts})`);
      try {
        appendFileSync(spec.logFile, `[${new Date().toISOString()}] ${RESTART_MARK} ${restarts + 1}/${this.maxRestarts} of ${spec.name} (${why})\n`);
      } catch {
        // a full disk: the restart goes on without its log line
      }
      this.start(spec, restarts + 1);
    });
    return proc;
  }

  pid(name: string): number | undefined {
    return this.children.get(name)?.proc.pid;
  }

  names(): string[] {
    return [...this.children.keys()];
  }

  /** SIGTERM everyone (workers finish their current job), SIGKILL after graceMs. */
  async stopAll(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.children.values()].map(
        ({ proc }) =>
          new Promise<void>((resolve) => {
            if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
            const t = setTimeout(() => proc.kill('SIGKILL'), graceMs);
            proc.once('exit', () => {
              clearTimeout(t);
              resolve();
            });
            proc.kill('SIGTERM');
          }),
      ),
    );
  }
}
