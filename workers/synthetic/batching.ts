// The time model of a vLLM-style server with continuous batching, for the synthetic policy
// server in fleet simulations (bench/fleet/): what a request waits, not what it computes.
// Each engine step
//   - admits waiting requests first come first served, up to maxNumSeqs running (vLLM's
//     max_num_seqs) and maxPrefillTokens prompt tokens per step (its max_num_batched_tokens);
//   - lasts stepMs + stepMsPerSeq * running + prefillMsPerToken * admitted prompt tokens;
//   - gives every running sequence one token; a sequence that has all of its tokens leaves.
// So one sequence alone decodes at 1000 / (stepMs + stepMsPerSeq) tokens/s, and the server's
// capacity is maxNumSeqs * 1000 / (stepMs + stepMsPerSeq * maxNumSeqs) tokens/s (capacity()).
// Steps run on a wall-clock schedule (each ends at the previous end + its length): a timer
// late by up to CATCH_UP_MS is caught up, so timer jitter does not cost throughput; a process
// starved for longer (a loaded machine) restarts its schedule at now rather than run a burst
// of steps in the past.
export interface BatchingOptions {
  maxNumSeqs: number;
  maxPrefillTokens: number;
  stepMs: number;
  stepMsPerSeq: number;
  prefillMsPerToken: number;
}

/** How far behind the wall clock a step may start and still count from its scheduled time. */
export const CATCH_UP_MS = 50;

export const DEFAULT_BATCHING: BatchingOptions = { maxNumSeqs: 256, maxPrefillTokens: 8192, stepMs: 12, stepMsPerSeq: 0.04, prefillMsPerToken: 0.01 };

/** Decode tokens per second with `running` sequences in every step (the model's throughput curve). */
export const decodeRate = (o: BatchingOptions, running: number) => (running * 1000) / (o.stepMs + o.stepMsPerSeq * running);

/** Tokens per second at a full batch: the most the server can give. */
export const capacity = (o: BatchingOptions) => decodeRate(o, o.maxNumSeqs);

interface Seq {
  prompt: number;
  left: number;
  queuedAt: number;
  admittedAt: number;
  done: (t: { queueMs: number; serviceMs: number }) => void;
}

/** Running totals, for /stats (bench/fleet reads them). */
export interface BatchStats {
  requests: number;
  tokens: number;
  steps: number;
  /** Sum over steps of the running batch (mean batch = batchSum / steps). */
  batchSum: number;
  busyMs: number;
  queueMs: number;
  serviceMs: number;
}

export class BatchScheduler {
  private readonly waiting: Seq[] = [];
  private running: Seq[] = [];
  private stepEnd = 0; // wall-clock end of the step in progress (0: idle)
  readonly stats: BatchStats = { requests: 0, tokens: 0, steps: 0, batchSum: 0, busyMs: 0, queueMs: 0, serviceMs: 0 };

  constructor(
    private readonly o: BatchingOptions,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Resolves when `completionTokens` tokens of this request are decoded. */
  submit(promptTokens: number, completionTokens: number): Promise<{ queueMs: number; serviceMs: number }> {
    return new Promise((done) => {
      this.waiting.push({ prompt: promptTokens, left: Math.max(1, completionTokens), queuedAt: this.now(), admittedAt: 0, done });
      if (this.stepEnd === 0) this.step(this.now());
    });
  }

  /** Start a step at `start` (the previous step's end, or now when idle). */
  private step(scheduled: number): void {
    const start = Math.max(scheduled, this.now() - CATCH_UP_MS);
    let prefill = 0;
    while (this.waiting.length && this.running.length < this.o.maxNumSeqs) {
      // A prompt longer than the budget still goes, alone (vLLM would chunk it).
      if (prefill > 0 && prefill + this.waiting[0]!.prompt > this.o.maxPrefillTokens) break;
      const s = this.waiting.shift()!;
      s.admittedAt = start;
      prefill += s.prompt;
      this.running.push(s);
    }
    if (!this.running.length) {
      this.stepEnd = 0;
      return;
    }
    const ms = this.o.stepMs + this.o.stepMsPerSeq * this.running.length + this.o.prefillMsPerToken * prefill;
    this.stepEnd = start + ms;
    Object.assign(this.stats, { steps: this.stats.steps + 1, batchSum: this.stats.batchSum + this.running.length, busyMs: this.stats.busyMs + ms });
    setTimeout(() => this.finish(), Math.max(0, this.stepEnd - this.now()));
  }

  private finish(): void {
    const end = this.stepEnd;
    const left: Seq[] = [];
    for (const s of this.running) {
      s.left -= 1;
      this.stats.tokens += 1;
      if (s.left > 0) left.push(s);
      else {
        const t = { queueMs: Math.max(0, s.admittedAt - s.queuedAt), serviceMs: end - s.admittedAt };
        Object.assign(this.stats, {
          requests: this.stats.requests + 1,
          queueMs: this.stats.queueMs + t.queueMs,
          serviceMs: this.stats.serviceMs + t.serviceMs,
        });
        s.done(t);
      }
    }
    this.running = left;
    // The next step starts where this one ended, not when the timer fired (caught up when late).
    this.step(end);
  }
}
