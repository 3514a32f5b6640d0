// The trainer part in a worker thread (node:worker_threads): a tfjs step is synchronous
// compute that would block the trainer worker's event loop for the whole update, so BullMQ
// could not renew the job's lock and the lock had to outlast an update (minutes). Run in a
// thread, the step leaves the loop free: the lock is short (queues.trainerLockMs) and
// renewed, and a killed trainer's update goes back to the queue within seconds
// (workers/reclaim.ts). Same code, same backend, same bytes as in the main thread. tfjs is
// loaded in this one thread only (the main thread never imports it): tfjs-node's native addon
// loads in the first thread that asks for it, not in a second (tensorflow/tfjs#8388). With the
// Tinker contract (trainer.engine embedded | tinker) the thread only builds requests and waits on
// futures; the compute is the service's.
import { Worker } from 'node:worker_threads';
import type { RunConfig } from '../configs/schema.ts';
import type { TrainStats } from './payloads.ts';
import type { TrainerPart, TrainSequence } from './parts.ts';

export interface ThreadData {
  cfg: RunConfig;
  runId: string;
  runDir: string;
  trainerUrl: string | null;
}

export type ThreadCall = { id: number } & (
  | { op: 'ready' }
  | { op: 'init'; initAdapter: string | null }
  | { op: 'load'; dir: string }
  | { op: 'step'; batch: TrainSequence[]; step: number }
  | { op: 'save'; dir: string }
);
type Op = ThreadCall extends infer C ? (C extends { op: infer O } ? O : never) : never;

export type ThreadReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: { name: string; message: string; stack: string } };

const ENTRY = new URL('./trainer-thread-entry.mjs', import.meta.url);

/** A TrainerPart whose calls run in a worker thread; `close` ends the thread. */
export async function threadTrainer(
  cfg: RunConfig,
  runId: string,
  where: { runDir: string; trainerUrl: string | null },
): Promise<TrainerPart & { close(): Promise<void> }> {
  const worker = new Worker(ENTRY, { workerData: { cfg, runId, ...where } satisfies ThreadData });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let next = 0;
  let dead: Error | null = null;
  const failAll = (e: Error) => {
    dead = e;
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  };
  worker.on('message', (r: ThreadReply) => {
    const p = pending.get(r.id);
    if (!p) return;
    pending.delete(r.id);
    if (r.ok) p.resolve(r.value);
    else p.reject(Object.assign(new Error(r.error.message), { name: r.error.name, stack: r.error.stack }));
  });
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`the trainer thread exited (code ${code})`)));
  const call = <T>(op: Op, args: Record<string, unknown> = {}): Promise<T> => {
    if (dead) return Promise.reject(dead);
    const id = next++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ id, op, ...args });
    });
  };
  await call('ready'); // the model is loaded (or its error is thrown here)
  return {
    init: (initAdapter) => call('init', { initAdapter }),
    load: (dir) => call('load', { dir }),
    step: (batch, step) => call<TrainStats>('step', { batch, step }),
    save: (dir) => call('save', { dir }),
    async close() {
      await worker.terminate();
    },
  };
}
