// Inside the trainer's worker thread: build the trainer part (real: tfjs model + LoRA;
// synthetic: the toy step) from the run config and answer the calls the trainer worker's
// main thread posts (workers/trainer-thread.ts). tfjs computes here, so the main thread's
// event loop stays free: BullMQ renews the job lock while a step runs.
import { parentPort, workerData } from 'node:worker_threads';
import type { RunConfig } from '../configs/schema.ts';
import { loadParts } from './load-parts.ts';
import type { TrainerPart } from './parts.ts';
import type { ThreadCall, ThreadData, ThreadReply } from './trainer-thread.ts';

const port = parentPort;
if (!port) throw new Error('workers/trainer-thread-main.ts runs only as a worker thread (workers/trainer-thread.ts starts it)');
const { cfg, runId, runDir, trainerUrl } = workerData as ThreadData;
const log = (line: string) => console.log(`[${new Date().toISOString()}] trainer: ${line}`);
let trainer: Promise<TrainerPart> | null = null;
const part = () => (trainer ??= loadParts(cfg as RunConfig, runId).then((p) => p.trainer({ runDir, trainerUrl, log })));

async function answer(call: ThreadCall): Promise<unknown> {
  const t = await part();
  switch (call.op) {
    case 'ready':
      return null;
    case 'init':
      return await t.init(call.initAdapter);
    case 'load':
      return await t.load(call.dir);
    case 'step':
      return await t.step(call.batch, call.step);
    case 'save':
      return await t.save(call.dir);
  }
}

// One call at a time, in order (the trainer worker awaits each before the next).
let chain = Promise.resolve();
port.on('message', (call: ThreadCall) => {
  chain = chain.then(async () => {
    let reply: ThreadReply;
    try {
      reply = { id: call.id, ok: true, value: await answer(call) };
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      reply = { id: call.id, ok: false, error: { name: err.name, message: err.message, stack: err.stack ?? '' } };
    }
    port.postMessage(reply);
  });
});
