// ServeModel over the trainer's tfjs Qwen3 (trainer/model/): the same weights and the same
// decoder layer the trainer scores with, so reported logprobs match `tokenLogprobs` for
// the same ids (SPEC §9). One KV cache per sequence (createKvCache / forwardStep).
import { selectBackend, type BackendKind } from '../trainer/backend.ts';
import { loadPeftAdapter } from '../trainer/lora/peft.ts';
import { createKvCache, forwardStep, loadModel, type LoraAdapter, type Qwen3Model } from '../trainer/model/index.ts';
import type { AdapterHandle, Sequence, ServeModel } from './model.ts';

export type { BackendKind };

/** Our handle is the trainer's LoraAdapter itself (it has dispose()). */
const asLora = (a: AdapterHandle | null) => a as LoraAdapter | null;

export function serveModelOf(model: Qwen3Model): ServeModel {
  return {
    vocabSize: model.config.vocabSize,
    maxContext: model.config.maxPositionEmbeddings,
    dir: model.dir,
    support: model.vocab?.keptIds,
    newSequence(adapter): Sequence {
      const cache = createKvCache(model);
      return {
        get length() {
          return cache.length;
        },
        feed: (ids) => forwardStep(model, asLora(adapter), cache, [...ids]),
        dispose: () => cache.dispose(),
      };
    },
    loadAdapter: async (dir) => loadPeftAdapter(dir, model),
    dispose: () => model.dispose(),
  };
}

/** Select the tfjs backend, then load config.json + safetensors (+ vocab_map.json) from `dir`. */
export async function loadServeModel(dir: string, backend: BackendKind, log?: (line: string) => void): Promise<ServeModel> {
  const name = await selectBackend(backend, log);
  log?.(`loading ${dir} on tfjs backend "${name}"`);
  return serveModelOf(await loadModel(dir));
}
