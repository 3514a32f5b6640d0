// Runs generations. At most `maxConcurrency` sequences hold a KV cache at once; the rest
// wait in FIFO order. Between steps the loop yields to the event loop, so HTTP stays
// responsive while tfjs computes synchronously, and a new request joins at the next step.
// A job whose signal fired is dropped (its cache freed) before the next step; `drain()`
// refuses new work and waits for the admitted work to finish.
//
// Two loops share this queue: `BatchScheduler` (batch-scheduler.ts, the default where the
// backend is batch-invariant: one forward pass per step for all sequences) and `Scheduler`
// below, the interleaved one (`--batching off`): one sequence's step at a time, round robin,
// each computing exactly what it would alone.
import { ApiError } from './errors.ts';
import type { ChoiceResult, Generation } from './generation.ts';
import type { ServeMetrics } from './metrics.ts';

export interface Job {
  gen: Generation;
  resolve(r: ChoiceResult): void;
  reject(e: unknown): void;
  signal?: AbortSignal;
}

/** What the engine submits generations to. */
export interface GenScheduler {
  readonly inFlight: number;
  readonly waiting: number;
  /** Resolves with the finished choice; a fired `signal` cancels it (rejects with the reason). */
  submit(gen: Generation, signal?: AbortSignal): Promise<ChoiceResult>;
  /** Refuse new work and wait for everything admitted to finish. */
  drain(): Promise<void>;
}

export const yieldToEventLoop = () => new Promise<void>((r) => setImmediate(r));

export abstract class QueuedScheduler<J extends Job> implements GenScheduler {
  protected readonly queue: J[] = [];
  protected readonly active: J[] = [];
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    readonly maxConcurrency: number,
    protected readonly metrics?: ServeMetrics,
  ) {}

  get inFlight(): number {
    return this.active.length + this.queue.length;
  }

  get waiting(): number {
    return this.queue.length;
  }

  submit(gen: Generation, signal?: AbortSignal): Promise<ChoiceResult> {
    if (this.closed) return Promise.reject(new ApiError(503, 'the server is shutting down; retry against a running server', 'internal_server_error'));
    return new Promise<ChoiceResult>((resolve, reject) => {
      this.queue.push(this.wrap({ gen, resolve, reject, signal }));
      this.kick();
    });
  }

  async drain(): Promise<void> {
    this.closed = true;
    while (this.running) await this.running;
  }

  /** Per-job state of the loop. */
  protected abstract wrap(job: Job): J;

  /** One step for the active jobs. */
  protected abstract step(): Promise<void>;

  private kick(): void {
    if (this.running) return;
    this.running = (async () => {
      await yieldToEventLoop(); // so all choices submitted together are admitted together
      try {
        while (this.active.length || this.queue.length) {
          while (this.active.length < this.maxConcurrency && this.queue.length) this.active.push(this.queue.shift() as J);
          this.reapCancelled();
          if (this.active.length) await this.step();
        }
      } finally {
        this.running = null;
        if (this.queue.length) this.kick(); // work that arrived while the loop was ending
      }
    })();
  }

  private reapCancelled(): void {
    for (const job of [...this.active]) {
      if (!job.signal?.aborted) continue;
      job.gen.cancel();
      this.drop(job);
      job.reject(job.signal.reason ?? new Error('cancelled'));
    }
  }

  protected drop(job: J): void {
    const i = this.active.indexOf(job);
    if (i >= 0) this.active.splice(i, 1);
  }

  protected finish(job: J): void {
    this.drop(job);
    job.resolve(job.gen.result());
  }

  protected fail(job: J, e: unknown): void {
    job.gen.cancel();
    this.drop(job);
    job.reject(e);
  }
}

/**
 * Interleaved decoding: each round gives every live sequence one step of its own forward
 * pass (the whole prompt in one pass, then one id per step), with a yield after each.
 */
export class Scheduler extends QueuedScheduler<Job> {
  protected wrap(job: Job): Job {
    return job;
  }

  protected async step(): Promise<void> {
    for (const job of [...this.active]) {
      if (job.signal?.aborted) continue; // reaped before the next round
      const prefill = job.gen.result().ids.length === 0;
      try {
        const done = await job.gen.step();
        if (prefill) this.metrics?.prefilled(job.gen.spec.promptIds.length, 0);
        this.metrics?.step(1, prefill ? job.gen.spec.promptIds.length : 1, job.gen.forwardSeconds);
        if (job.gen.constraintSeconds !== null) this.metrics?.structured(job.gen.constraintSeconds);
        if (done) this.finish(job);
      } catch (e) {
        this.fail(job, e);
      }
      await yieldToEventLoop();
    }
  }
}
