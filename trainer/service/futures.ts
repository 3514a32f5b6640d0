// The service's futures (Tinker's retrieve_future): every training / sampling call answers at
// once with a request_id, runs later, and ends as a result or a failure. `wait` long-polls: it
// returns as soon as the future settles, or 'pending' after `holdMs` (the SDK re-polls at once
// on try_again, so the hold is what keeps a pending future from being a busy loop). Settled
// futures are kept `ttlMs` after settling and at most `maxKept` of them (oldest settled go
// first); a retrieve of an evicted one is 410 Gone, which the SDK treats as "promise expired".
import { randomUUID } from 'node:crypto';
import type { ForwardBackwardOutput } from '../tinker/forward-backward.ts';
import type { SampleResult } from '../tinker/sample.ts';

/** What a future resolves to: a JSON body, or a result that may go as protobuf. */
export type FutureResult =
  | { kind: 'json'; body: Record<string, unknown> }
  | { kind: 'forward_backward'; output: ForwardBackwardOutput }
  | { kind: 'sample'; result: SampleResult };

/** Tinker's RequestErrorCategory (a StrEnum of auto() names: lower case). */
export type ErrorCategory = 'user' | 'server' | 'unknown';

export type FutureState = { state: 'pending' } | { state: 'done'; result: FutureResult } | { state: 'failed'; error: string; category: ErrorCategory };

interface Entry {
  state: FutureState;
  settledAt: number;
  waiters: Set<() => void>;
}

export class FutureStore {
  private readonly entries = new Map<string, Entry>();
  private readonly gone = new Set<string>();
  private closed = false;

  constructor(private readonly o: { ttlMs: number; maxKept: number; now?: () => number }) {}

  private now(): number {
    return this.o.now?.() ?? Date.now();
  }

  /** A new pending future; `run` settles it. */
  create(run: () => Promise<FutureResult>, classify: (e: unknown) => { error: string; category: ErrorCategory }): string {
    const id = `req-${randomUUID()}`;
    const entry: Entry = { state: { state: 'pending' }, settledAt: 0, waiters: new Set() };
    this.entries.set(id, entry);
    const settle = (s: FutureState) => {
      entry.state = s;
      entry.settledAt = this.now();
      for (const w of entry.waiters) w();
      entry.waiters.clear();
      this.evict();
    };
    let running: Promise<FutureResult>;
    try {
      running = run();
    } catch (e) {
      running = Promise.reject(e);
    }
    running.then(
      (result) => settle({ state: 'done', result }),
      (e) => settle({ state: 'failed', ...classify(e) }),
    );
    return id;
  }

  /** The future's state, waiting up to `holdMs` for a pending one; null when unknown, 'gone' when evicted. */
  async wait(id: string, holdMs: number): Promise<FutureState | null | 'gone'> {
    const e = this.entries.get(id);
    if (!e) return this.gone.has(id) ? 'gone' : null;
    if (e.state.state === 'pending' && holdMs > 0 && !this.closed) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          e.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, holdMs);
        e.waiters.add(done);
      });
    }
    return e.state;
  }

  /** Settled futures past their time, or beyond the count, oldest first. */
  private evict(): void {
    const now = this.now();
    const settled = [...this.entries].filter(([, e]) => e.state.state !== 'pending').sort((a, b) => a[1].settledAt - b[1].settledAt);
    let over = settled.length - this.o.maxKept;
    for (const [id, e] of settled) {
      if (over > 0 || now - e.settledAt > this.o.ttlMs) {
        this.entries.delete(id);
        this.gone.add(id);
        over--;
      }
    }
    if (this.gone.size > 100_000) this.gone.clear();
  }

  /** Wake every long poll (server shutdown): they answer with the state they have. */
  close(): void {
    this.closed = true;
    for (const e of this.entries.values()) for (const w of [...e.waiters]) w();
  }

  /** Resolves once no future is pending (or after `maxMs`): the calls in flight have finished. */
  async drain(maxMs: number): Promise<void> {
    const until = this.now() + maxMs;
    while (this.pending > 0 && this.now() < until) await new Promise((r) => setTimeout(r, 25));
  }

  get pending(): number {
    return [...this.entries.values()].filter((e) => e.state.state === 'pending').length;
  }
}
