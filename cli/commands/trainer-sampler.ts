// The trainer service's sampler (trainer/service/types.ts Sampler), wired here so trainer/
// never imports serve/: serve/'s generation engine over the SAME tfjs base model the engines
// train on, with the PEFT adapter save_weights_for_sampler wrote loaded through serve's
// AdapterRegistry (cached by folder and content fingerprint, a few at a time). It scores as
// `gsteer serve` does: each token's logprob is log-softmax of the raw logits at temperature 1
// (no top-k/top-p), under the saved adapter, so it equals what the trainer's forward returns for
// the same ids (tokenLogprobs; serve/README.md: within float rounding, 1e-4). Prompt logprobs
// come from tokenLogprobs itself; the first prompt token has none (null).
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { adapterFingerprint } from '../../model/lora/peft.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import type { Qwen3Model } from '../../model/model.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import { AdapterRegistry } from '../../serve/adapters.ts';
import { generate, type Engine } from '../../serve/engine.ts';
import { Scheduler } from '../../serve/scheduler.ts';
import { serveModelOf } from '../../serve/tfjs-model.ts';
import type { SampleResult } from '../../trainer/tinker/sample.ts';
import type { Sampler, SamplerRequest } from '../../trainer/service/types.ts';

const BASE = '__base__';
/** Adapters kept loaded at once (each is a few MB on small bases; the oldest is unloaded first). */
const KEPT = 4;

export function serveSampler(model: Qwen3Model, backendName: string, maxConcurrency = 8): Sampler {
  const serveModel = { ...serveModelOf(model, backendName), dispose: () => {} }; // the base belongs to the command
  const adapters = new AdapterRegistry(serveModel, BASE);
  const engine: Engine = { model: serveModel, tok: qwen3Tokenizer(), adapters, scheduler: new Scheduler(maxConcurrency) };
  const loaded: string[] = []; // adapter names, oldest first

  async function adapterName(dir: string | null): Promise<string> {
    if (!dir) return BASE;
    const name = `${dir}#${adapterFingerprint(dir)}`;
    if (!loaded.includes(name)) {
      await adapters.load(name, dir);
      loaded.push(name);
      if (loaded.length > KEPT) adapters.unload(loaded.shift() as string);
    }
    return name;
  }

  return {
    async sample(r: SamplerRequest): Promise<SampleResult> {
      const name = await adapterName(r.adapterDir);
      const choices = await generate(engine, {
        params: {
          model: name,
          maxTokens: r.maxTokens,
          sampling: { temperature: r.temperature, topP: r.topP, topK: r.topK },
          seed: r.seed,
          n: r.numSamples,
          stop: r.stopStrings,
          stopTokenIds: r.stopTokens,
          ignoreEos: false,
          returnTokensAsTokenIds: true,
          returnTokenIds: true,
          stream: false,
          streamUsage: false,
          constraint: null,
        },
        prompts: [r.prompt],
        topLogprobs: 0,
        defaultMaxTokens: 'rest',
        constraint: null,
      });
      let promptLogprobs: (number | null)[] | null = null;
      if (r.promptLogprobs) {
        const lease = adapters.acquire(name);
        try {
          const { logprobs } = tokenLogprobs(model, lease.adapter as LoraAdapter | null, { inputIds: [r.prompt] });
          const row = (logprobs.arraySync() as number[][])[0] as number[];
          logprobs.dispose();
          promptLogprobs = row.map((x, i) => (i === 0 ? null : x));
        } finally {
          lease.release();
        }
      }
      return {
        sequences: choices.map((c) => ({ tokens: c.ids, logprobs: c.logprobs, stopReason: c.finishReason === 'length' ? 'length' : 'stop' })),
        promptLogprobs,
        promptCacheHitTokens: 0,
      };
    },
    async close() {
      await engine.scheduler.drain();
      adapters.disposeAll();
    },
  };
}
