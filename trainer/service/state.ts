// What the server holds: sessions (kept alive by heartbeats), models by id (one TrainingEngine
// each, requests run in seq_id order), sampling sessions, futures, and the idempotency table.
// Every call that becomes a future goes through `submit`, which makes retries safe:
//   - the same X-Idempotency-Key gets the same future (never run twice; on a model, keys are the model's own);
//   - on a model, the same seq_id gets the same future (the SDK's own retries of a submit
//     send a fresh key but the same seq_id), and a different call at a used seq_id is refused.
import { randomUUID } from 'node:crypto';
import type { TrainingEngine } from '../engine/types.ts';
import { CheckpointStore } from './checkpoints.ts';
import { badRequest, classifyFailure, notFound } from './errors.ts';
import { FutureStore, type FutureResult } from './futures.ts';
import { SeqQueue } from './seq-queue.ts';
import type { LoraSpec, ServiceOptions } from './types.ts';

export interface Session {
  id: string;
  lastSeen: number;
  models: Set<string>;
  samplers: Set<string>;
}

export interface ServedModel {
  id: string;
  sessionId: string;
  baseModel: string;
  lora: LoraSpec;
  /** Null until the create (or create-via-load) call at seq 0 has built it. */
  engine: TrainingEngine | null;
  queue: SeqQueue;
  /** seq_id -> the future and route it was submitted as. */
  bySeq: Map<number, { requestId: string; route: string }>;
}

export interface SamplingSession {
  id: string;
  baseModel: string;
  modelPath: string | null;
  adapterDir: string | null;
}

const IDEMPOTENCY_KEPT = 100_000;

export class ServiceState {
  readonly sessions = new Map<string, Session>();
  readonly models = new Map<string, ServedModel>();
  readonly samplers = new Map<string, SamplingSession>();
  readonly futures: FutureStore;
  readonly checkpoints: CheckpointStore;
  private readonly keys = new Map<string, { requestId: string; route: string }>();

  constructor(readonly opts: ServiceOptions) {
    this.futures = new FutureStore({ ttlMs: opts.futureTtlMs ?? 15 * 60_000, maxKept: opts.maxFuturesKept ?? 4096 });
    this.checkpoints = new CheckpointStore(opts.stateDir);
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  createSession(): Session {
    const s: Session = { id: `sess-${randomUUID()}`, lastSeen: this.now(), models: new Set(), samplers: new Set() };
    this.sessions.set(s.id, s);
    return s;
  }

  session(id: string): Session {
    const s = this.sessions.get(id);
    if (!s) throw notFound(`session ${id} is not open on this server (it ended after missed heartbeats, or the server restarted); create a new session`);
    s.lastSeen = this.now();
    return s;
  }

  model(id: string | null | undefined, field = 'model_id'): ServedModel {
    const m = id ? this.models.get(id) : undefined;
    if (!m)
      throw notFound(
        `${field} = ${JSON.stringify(id)} is not loaded on this server (the server restarted, its session ended, or it was unloaded); create a model and load_state from your last checkpoint`,
      );
    const s = this.sessions.get(m.sessionId);
    if (s) s.lastSeen = this.now(); // a call on a model keeps its session alive, as a heartbeat does
    return m;
  }

  /** Register a model whose seq-0 call (`build`) creates its engine. */
  addModel(sessionId: string, modelSeqId: number, baseModel: string, lora: LoraSpec): ServedModel {
    const id = `${sessionId}:train:${modelSeqId}`;
    const m: ServedModel = { id, sessionId, baseModel, lora, engine: null, queue: new SeqQueue(0), bySeq: new Map() };
    this.models.set(id, m);
    this.session(sessionId).models.add(id);
    return m;
  }

  unloadModel(m: ServedModel): void {
    this.models.delete(m.id);
    this.sessions.get(m.sessionId)?.models.delete(m.id);
    m.engine?.dispose();
    m.engine = null;
  }

  /**
   * A call as a future, safe to retry (module comment). `model` + `seq` order it on the model
   * (seq null: after the highest); without a model it runs at once.
   */
  submit(
    route: string,
    key: string | null,
    run: () => Promise<FutureResult>,
    on?: { model: ServedModel; seq: number | null },
  ): { requestId: string; fresh: boolean } {
    const known = (hit: { requestId: string; route: string } | undefined, why: string) => {
      if (!hit) return null;
      if (hit.route !== route) throw badRequest(`${why} was used for ${hit.route}, not ${route}; use a new key / seq_id for a new request`);
      return { requestId: hit.requestId, fresh: false };
    };
    // a model's calls are keyed within the model: a client that replays its keys on a new model (after
    // reloading a state) runs them there, instead of getting the old model's futures back
    const scoped = key && on ? `${on.model.id}|${key}` : key;
    const byKey = known(scoped ? this.keys.get(scoped) : undefined, `X-Idempotency-Key ${key}`);
    if (byKey) return byKey;
    const bySeq = on && on.seq !== null ? known(on.model.bySeq.get(on.seq), `seq_id ${on.seq} of model ${on.model.id}`) : null;
    if (bySeq) return bySeq;
    const ordered = on ? () => on.model.queue.submit(on.seq, run, `${route} on ${on.model.id}`) : run;
    if (on && on.seq !== null && on.model.queue.seen(on.seq))
      throw badRequest(`${route}: seq_id ${on.seq} of model ${on.model.id} already ran and its result is gone; continue from seq_id ${on.model.queue.nextSeq}`);
    const requestId = this.futures.create(ordered, classifyFailure);
    const entry = { requestId, route };
    if (on) on.model.bySeq.set(on.seq ?? on.model.queue.nextSeq - 1, entry);
    if (scoped) {
      this.keys.set(scoped, entry);
      if (this.keys.size > IDEMPOTENCY_KEPT) this.keys.delete(this.keys.keys().next().value as string);
    }
    return { requestId, fresh: true };
  }

  /** End sessions silent for longer than the timeout; their models are unloaded. */
  sweep(timeoutMs: number, log?: (line: string) => void): void {
    const now = this.now();
    for (const s of [...this.sessions.values()]) {
      if (now - s.lastSeen <= timeoutMs) continue;
      for (const id of s.models) {
        const m = this.models.get(id);
        if (m) this.unloadModel(m);
      }
      for (const id of s.samplers) this.samplers.delete(id);
      this.sessions.delete(s.id);
      log?.(`session ${s.id} ended: no heartbeat for ${Math.round((now - s.lastSeen) / 1000)} s (its models are unloaded)`);
    }
  }

  close(): void {
    this.futures.close();
    for (const m of [...this.models.values()]) this.unloadModel(m);
  }
}
