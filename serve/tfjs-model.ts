// ServeModel over the trainer's tfjs Qwen3 (model/): the same weights and the same
// layer math the trainer scores with, so reported logprobs match `tokenLogprobs` for the
// same ids (method §9). One KV cache per sequence; `feed` is the one-sequence forwardStep of
// the interleaved scheduler, `forward` the batched step (model/batch-step.ts).
import * as tf from '@tensorflow/tfjs';
import { selectBackend, type BackendKind } from '../model/backend.ts';
import { loadPeftAdapter } from '../model/lora/peft.ts';
import { forwardBatch } from '../model/batch-step.ts';
import { appendKv, sliceKv, type KvBlock as TfKvBlock } from '../model/kv-blocks.ts';
import { createKvCache, forwardStep, loadModel, type KvCache, type LoraAdapter, type Qwen3Model } from '../model/index.ts';
import { batchInvariant } from './batch-invariance.ts';
import type { AdapterHandle, Sequence, ServeModel } from './model.ts';
import { gatherRow } from './sampling.ts';

export type { BackendKind };

/** Our handle is the trainer's LoraAdapter itself (it has dispose()). */
const asLora = (a: AdapterHandle | null) => a as LoraAdapter | null;

interface TfSequence extends Sequence {
  readonly cache: KvCache;
  readonly adapter: LoraAdapter | null;
}

/** `backendName`: the tfjs backend the model computes on (default: the current one). */
export function serveModelOf(model: Qwen3Model, backendName: string = tf.getBackend()): ServeModel {
  const V = model.config.vocabSize;
  const tfSeq = (s: Sequence) => s as TfSequence;
  // lm_head rows are the kept ids in order (model/vocab-map.ts), or every id
  const support = model.vocab?.keptIds ?? Int32Array.from({ length: V }, (_, i) => i);
  return {
    vocabSize: V,
    maxContext: model.config.maxPositionEmbeddings,
    dir: model.dir,
    support,
    backend: { name: backendName, batchInvariant: batchInvariant(backendName) },
    newSequence(adapter): Sequence {
      const cache = createKvCache(model);
      const seq: TfSequence = {
        cache,
        adapter: asLora(adapter),
        get length() {
          return cache.length;
        },
        feed: (ids) => gatherRow(forwardStep(model, asLora(adapter), cache, [...ids]), support),
        dispose: () => cache.dispose(),
      };
      return seq;
    },
    forward: (items, blockSize) =>
      forwardBatch(
        model,
        items.map((it) => ({ cache: tfSeq(it.seq).cache, adapter: tfSeq(it.seq).adapter, ids: it.ids, logits: it.logits })),
        blockSize,
      ),
    saveBlock: (seq, start, end) => sliceKv(model, tfSeq(seq).cache, start, end),
    extend: (seq, blocks) => appendKv(model, tfSeq(seq).cache, blocks as readonly TfKvBlock[]),
    loadAdapter: async (dir) => loadPeftAdapter(dir, model),
    dispose: () => model.dispose(),
  };
}

/** Select the tfjs backend, then load config.json + safetensors (+ vocab_map.json) from `dir`. */
export async function loadServeModel(dir: string, backend: BackendKind, log?: (line: string) => void): Promise<ServeModel> {
  const name = await selectBackend(backend, log);
  log?.(`loading ${dir} on tfjs backend "${name}"`);
  return serveModelOf(await loadModel(dir), name);
}
