// GRPO started from the SFT adapter sees the SFT model (method §7 "the SFT checkpoint GRPO
// resumes from"): the policy server's runtime LoRA load of <run>/sft/adapter samples with
// the logprobs the trained adapter gives in memory, and the GRPO trainer part initialized
// from that folder scores the sampled turn with the same logprobs (ratio 1 on its first
// step: loss = -A exactly as at ratio 1, no clipping).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { rmSync } from 'node:fs';
import { resolveConfig } from '../../configs/load.ts';
import { runSft } from '../../trainer/sft/train.ts';
import { tokenLogprobs } from '../../model/index.ts';
import { serveModelOf } from '../../serve/tfjs-model.ts';
import { Generation } from '../../serve/generation.ts';
import { encodeChat, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { readSftExamples } from '../../trainer/sft/tokens.ts';
import { realParts } from '../../workers/real-parts.ts';
import { makeMicro } from './micro.ts';

let m: ReturnType<typeof makeMicro>;
beforeAll(() => {
  m = makeMicro('gsteer-sft-grpo-');
});
afterAll(() => rmSync(m.root, { recursive: true, force: true }));

describe('GRPO from the SFT adapter', () => {
  it('server and GRPO trainer score the first sampled turn exactly as the SFT model does', async () => {
    const cfg = resolveConfig({
      runName: 'grpo-init',
      runDir: m.root,
      seed: 11,
      policy: { model: m.modelDir },
      trainer: { backend: 'cpu', engine: 'inprocess' }, // the step part in process: the contract path's scores are tests/trainer/update/
      lora: { r: 2, alpha: 4, dropout: 0, targetModules: ['q_proj', 'v_proj', 'up_proj'] }, // no dropout: scores must be exact
      sft: { examples: m.examples, maxSteps: 3, batchSize: 4, microBatchSize: 2, learningRate: 0.05, heldOutFraction: 0.2, evalEvery: 3 },
      grpo: { maxPolicyLag: 1 }, // off-policy path: the step uses the server logprobs as logp_old
    });
    const tok = qwen3Tokenizer();
    const promptIds = encodeChat(tok, readSftExamples(m.examples)[0]!.input);
    let sampled: { ids: number[]; logprobs: number[] } = { ids: [], logprobs: [] };
    let inMemory: number[] = [];
    const r = await runSft(cfg, {
      log: () => {},
      progress: false,
      onTrained: async (model, adapter) => {
        const serve = serveModelOf(model);
        const served = await serve.loadAdapter(`${m.root}/grpo-init/sft/adapter`); // vLLM-style runtime load of the folder
        const g = new Generation(serve, served, tok, {
          promptIds,
          maxTokens: 12,
          sampling: { temperature: 1, topP: 1, topK: 0 },
          seed: 3,
          choiceIndex: 0,
          stop: [],
          stopTokenIds: [],
          ignoreEos: true,
          topLogprobs: 0,
        });
        while (!(await g.step()));
        sampled = g.result();
        const lp = tokenLogprobs(model, adapter, { inputIds: [[...promptIds, ...sampled.ids]] }).logprobs.arraySync()[0]!;
        inMemory = lp.slice(promptIds.length);
        served.dispose();
      },
    });
    expect(sampled.ids.length).toBe(12);
    for (let i = 0; i < 12; i++) expect(sampled.logprobs[i]!).toBeCloseTo(inMemory[i]!, 4);

    const trainer = await (await realParts(cfg, 'grpo-init')).trainer();
    await trainer.init(r.adapterDir);
    const stats = await trainer.step([{ promptIds, completionIds: sampled.ids, oldLogprobs: sampled.logprobs, advantage: 1, trajectory: 0 }], 1);
    expect(stats.clip_ratio).toBe(0);
    expect(stats.loss).toBeCloseTo(-1, 4); // -mean(rho * A) with rho = exp(logp_trainer - logp_server) = 1
  });
});
