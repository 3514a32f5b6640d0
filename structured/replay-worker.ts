// One mask-replay worker thread (structured/replay-pool.ts): its own xgrammar instance and
// compiled grammars (compile.ts cache, per thread), replaying one turn per message and
// answering on the port it was given, then bumping the shared signal so a main thread
// blocked in Atomics.wait (replay-pool.ts `get`) wakes up.
import { parentPort, type MessagePort } from 'node:worker_threads';
import { compileConstraint, qwen3Vocab, replayConstraint } from './index.ts';
import type { ReplayJob, ReplayReply } from './replay-pool.ts';

if (!parentPort) throw new Error('internal: structured/replay-worker.ts runs as a worker thread');
let port: MessagePort | null = null;
let signal: Int32Array | null = null;

async function run(job: ReplayJob): Promise<{ reply: ReplayReply; transfer: ArrayBuffer[] }> {
  const t0 = performance.now();
  try {
    const compiled = await compileConstraint(job.spec, qwen3Vocab(job.kept, job.size));
    const r = await replayConstraint(compiled, { maxTokens: job.maxTokens }, job.completionIds);
    const seconds = (performance.now() - t0) / 1000;
    const reply: ReplayReply = { batch: job.batch, b: job.b, masks: r.masks, maskIndex: r.maskIndex, accepted: r.accepted, seconds };
    return { reply, transfer: [...r.masks.map((m) => m.buffer as ArrayBuffer), r.maskIndex.buffer as ArrayBuffer] };
  } catch (e) {
    return { reply: { batch: job.batch, b: job.b, error: e instanceof Error ? e.message : String(e), seconds: (performance.now() - t0) / 1000 }, transfer: [] };
  }
}

// One turn at a time, in the order sent (the pool sends a batch's turns in micro-batch order).
let queue = Promise.resolve();
parentPort.on('message', (msg: { port: MessagePort; signal: SharedArrayBuffer } | ReplayJob) => {
  if ('port' in msg) {
    port = msg.port;
    signal = new Int32Array(msg.signal);
    return;
  }
  queue = queue.then(async () => {
    const { reply, transfer } = await run(msg);
    port!.postMessage(reply, transfer);
    Atomics.add(signal!, 0, 1);
    Atomics.notify(signal!, 0);
  });
});
