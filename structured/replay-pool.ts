// Constrained turns' masks replayed off the trainer's critical path (issue 22): worker threads
// (structured/replay-worker.ts, each with its own xgrammar instance) replay the turns of a batch
// in micro-batch order while the trainer computes, and the trainer takes each sequence's
// masks when its micro-batch needs them (`masks[b]`), waiting only if that turn is not done.
//
// The trainer's step is synchronous (tfjs holds the thread), so the wait cannot be an await:
// a worker posts its reply on a MessagePort and bumps a shared counter; the trainer sleeps
// in Atomics.wait on that counter and reads the replies with receiveMessageOnPort, neither
// of which needs the event loop. Same masks as the in-process replay (turn-masks.ts
// `replayTurnMasks`, tested against it), so the same logprobs and the same run.
import { availableParallelism } from 'node:os';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type { ConstraintSpec, PolicyGrammar } from './index.ts';
import { policyMinTokens } from './turn/caps.ts';
import type { TokenMasks } from '../model/token-masks.ts';
import type { VocabMap } from '../model/vocab-map.ts';
import { specOf, turnMasks, type MaskedTurn, type ReplayStats } from './turn-masks.ts';

/** One turn to replay (main -> worker). */
export interface ReplayJob {
  batch: number;
  b: number;
  spec: ConstraintSpec;
  maxTokens: number;
  completionIds: number[];
  kept: Int32Array | null;
  size: number;
}

/** Its masks (worker -> main), or why the replay failed. */
export interface ReplayReply {
  batch: number;
  b: number;
  masks?: Int32Array[];
  maskIndex?: Int32Array;
  accepted?: boolean;
  error?: string;
  seconds: number;
}

/** The metrics of a batch without constrained turns. */
export const NO_REPLAY_STATS: ReplayStats = {
  'constraint/turns': 0,
  'constraint/replay_rejected': 0,
  'constraint/distinct_masks': 0,
  'constraint/replay_seconds': 0,
  'constraint/replay_wait_seconds': 0,
};

/** No reply for this long while waiting: a worker died (e.g. out of memory). */
const STALL_MS = 300_000;

interface Slot {
  worker: Worker;
  port: MessagePort;
}

/** A batch's masks as they arrive: `masks[b]` blocks until sequence b's replay is done. */
export class PendingMasks {
  private readonly done = new Map<number, TokenMasks | null>();
  private readonly errors = new Map<number, string>();
  private workerSeconds = 0;
  private waitMs = 0;
  private rejected = 0;
  private distinct = 0;
  /** Per sequence, resolved on access (an array-like view for the trainer's batch). */
  readonly masks: readonly (TokenMasks | null)[];

  constructor(
    private readonly pool: ReplayPool,
    readonly id: number,
    private readonly turns: readonly MaskedTurn[],
  ) {
    const get = (b: number) => this.get(b);
    this.masks = new Proxy(new Array<TokenMasks | null>(turns.length).fill(null), {
      get(target, prop, receiver) {
        if (typeof prop === 'string' && /^\d+$/.test(prop) && Number(prop) < target.length) return get(Number(prop));
        return Reflect.get(target, prop, receiver);
      },
    });
    for (let b = 0; b < turns.length; b++) if (!turns[b]!.constraint) this.done.set(b, null);
  }

  /** Called by the pool with each reply of this batch. */
  receive(r: ReplayReply): void {
    this.workerSeconds += r.seconds;
    if (r.error !== undefined) {
      this.errors.set(r.b, r.error);
      return;
    }
    const turn = this.turns[r.b]!;
    if (!r.accepted) {
      this.rejected++;
      this.done.set(r.b, null);
      return;
    }
    this.distinct += r.masks!.length;
    this.done.set(r.b, turnMasks(turn.promptIds.length, turn.completionIds.length, r.masks!, r.maskIndex!));
  }

  /** Sequence b's masks (null: unconstrained, or rejected and scored unmasked); waits for its replay. */
  get(b: number): TokenMasks | null {
    if (!this.done.has(b) && !this.errors.has(b)) {
      const t0 = performance.now();
      this.pool.waitFor(this, b);
      this.waitMs += performance.now() - t0;
    }
    const error = this.errors.get(b);
    if (error !== undefined) throw new Error(`mask replay of sequence ${b} failed: ${error}`);
    return this.done.get(b)!;
  }

  has(b: number): boolean {
    return this.done.has(b) || this.errors.has(b);
  }

  /** The replay's metrics (turn-masks.ts ReplayStats); waits for every turn. */
  stats(): ReplayStats {
    for (let b = 0; b < this.turns.length; b++) this.get(b);
    const turns = this.turns.filter((t) => t.constraint).length;
    const kept = turns - this.rejected;
    return {
      'constraint/turns': turns,
      'constraint/replay_rejected': this.rejected,
      'constraint/distinct_masks': kept ? this.distinct / kept : 0,
      'constraint/replay_seconds': this.workerSeconds,
      'constraint/replay_wait_seconds': this.waitMs / 1000,
    };
  }
}

export class ReplayPool {
  private readonly slots: Slot[];
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private readonly pending = new Map<number, PendingMasks>();
  private nextBatch = 0;

  /** `grammars`: the environment's, which turns are replayed under (turn-masks.ts specOf); `threads`: worker threads (default: the cores less one for the trainer, 1 to 8). */
  constructor(
    private readonly grammars: readonly PolicyGrammar[],
    threads = Math.min(8, Math.max(1, availableParallelism() - 1)),
  ) {
    this.slots = Array.from({ length: threads }, () => {
      const worker = new Worker(new URL('./replay-worker-entry.mjs', import.meta.url));
      const { port1, port2 } = new MessageChannel();
      worker.postMessage({ port: port2, signal: this.signal.buffer }, [port2]);
      worker.unref(); // an idle pool does not keep the process alive
      return { worker, port: port1 };
    });
  }

  get threads(): number {
    return this.slots.length;
  }

  /**
   * Sends every constrained turn to the workers at once (turn b to worker b mod threads, so
   * the first micro-batches' turns come first) and returns their masks as they arrive. The
   * spec check (turn-masks.ts specOf) runs here, before anything is sent.
   */
  start(turns: readonly MaskedTurn[], model: { vocab: VocabMap | null; config: { vocabSize: number } }): PendingMasks {
    const specs = turns.map((t) => (t.constraint ? specOf(t.constraint, this.grammars) : null));
    const batch = this.nextBatch++;
    const p = new PendingMasks(this, batch, turns);
    this.pending.set(batch, p);
    const kept = model.vocab?.keptIds ?? null;
    let k = 0;
    turns.forEach((t, b) => {
      if (!t.constraint) return;
      const job: ReplayJob = {
        batch,
        b,
        spec: specs[b]!,
        maxTokens: t.constraint.maxTokens,
        completionIds: [...t.completionIds],
        kept,
        size: model.config.vocabSize,
      };
      this.slots[k++ % this.slots.length]!.worker.postMessage(job);
    });
    return p;
  }

  /**
   * Let every worker build the vocabulary and compile `spec` now (seconds at 151,936 ids),
   * e.g. while the first rollouts run, so the first update does not wait for it.
   */
  warm(spec: ConstraintSpec, model: { vocab: VocabMap | null; config: { vocabSize: number } }): void {
    for (const s of this.slots) {
      const job: ReplayJob = {
        batch: -1,
        b: 0,
        spec,
        maxTokens: policyMinTokens(),
        completionIds: [],
        kept: model.vocab?.keptIds ?? null,
        size: model.config.vocabSize,
      };
      s.worker.postMessage(job); // its reply finds no pending batch and is dropped
    }
  }

  /** Reads every reply that has arrived, without the event loop. */
  private drain(): void {
    for (const s of this.slots) {
      for (let m = receiveMessageOnPort(s.port); m; m = receiveMessageOnPort(s.port)) {
        const r = m.message as ReplayReply;
        this.pending.get(r.batch)?.receive(r);
      }
    }
  }

  /** Blocks the thread until sequence b of `p` has its reply (Atomics.wait on the workers' counter). */
  waitFor(p: PendingMasks, b: number): void {
    let last = performance.now();
    for (;;) {
      const seen = Atomics.load(this.signal, 0);
      this.drain();
      if (p.has(b)) return;
      if (Atomics.wait(this.signal, 0, seen, 1000) !== 'timed-out') last = performance.now();
      else if (performance.now() - last > STALL_MS) throw new Error(`mask replay: no worker answered for ${STALL_MS / 1000} s (a replay worker thread died?)`);
    }
  }

  /** Forget a batch's bookkeeping once its masks are taken. */
  release(p: PendingMasks): void {
    this.pending.delete(p.id);
  }

  async close(): Promise<void> {
    await Promise.all(this.slots.map((s) => (s.port.close(), s.worker.terminate())));
  }
}
