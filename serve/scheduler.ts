// Runs generations: at most `maxConcurrency` sequences hold a KV cache at once, the rest
// wait in FIFO order. In-flight sequences are NOT batched into one forward pass; their
// decode steps are interleaved round-robin, one step each per round, with a yield to the
// event loop after every step. So a new request gets its first token after at most one
// step of each other in-flight sequence (good time-to-first-token), HTTP stays responsive
// while tfjs computes synchronously, and each sequence's numbers are exactly what it would
// compute alone (same seed + same request = same completion under any concurrency).
import { ApiError } from './errors.ts';
import type { ChoiceResult, Generation } from './generation.ts';

interface Job {
  gen: Generation;
  resolve(r: ChoiceResult): void;
  reject(e: unknown): void;
  signal?: AbortSignal;
}

const yieldToEventLoop = () => new Promise<void>((r) => setImmediate(r));

export class Scheduler {
  private readonly waiting: Job[] = [];
  private readonly active: Job[] = [];
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(readonly maxConcurrency: number) {}

  get inFlight(): number {
    return this.active.length + this.waiting.length;
  }

  /** Resolves with the finished choice; a fired `signal` cancels it (rejects with the reason). */
  submit(gen: Generation, signal?: AbortSignal): Promise<ChoiceResult> {
    if (this.closed) return Promise.reject(new ApiError(503, 'the server is shutting down; retry against a running server', 'internal_server_error'));
    return new Promise<ChoiceResult>((resolve, reject) => {
      this.waiting.push({ gen, resolve, reject, signal });
      this.kick();
    });
  }

  private kick(): void {
    if (this.running) return;
    this.running = (async () => {
      await yieldToEventLoop(); // so all choices submitted together are admitted together
      try {
        await this.loop();
      } finally {
        this.running = null;
        if (this.waiting.length) this.kick(); // work that arrived while the loop was ending
      }
    })();
  }

  private async loop(): Promise<void> {
    while (this.active.length || this.waiting.length) {
      while (this.active.length < this.maxConcurrency && this.waiting.length) this.active.push(this.waiting.shift() as Job);
      for (const job of [...this.active]) {
        await this.stepOne(job);
        await yieldToEventLoop();
      }
    }
  }

  private async stepOne(job: Job): Promise<void> {
    const drop = () => this.active.splice(this.active.indexOf(job), 1);
    if (job.signal?.aborted) {
      job.gen.cancel();
      drop();
      job.reject(job.signal.reason ?? new Error('cancelled'));
      return;
    }
    try {
      if (!(await job.gen.step())) return;
      drop();
      job.resolve(job.gen.result());
    } catch (e) {
      job.gen.cancel();
      drop();
      job.reject(e);
    }
  }

  /** Refuse new work and wait for everything admitted to finish. */
  async drain(): Promise<void> {
    this.closed = true;
    while (this.running) await this.running;
  }
}
