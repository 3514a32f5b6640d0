// The SFT loop end to end on a micro Qwen3 (random init, trimmed vocabulary): the adapter
// changes and the training loss falls; a run killed after a checkpoint and resumed writes
// byte-identical adapter files to an uninterrupted run (method §10); the final adapter is a
// PEFT folder that loads back and scores exactly like the trained adapter in memory.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { resolveConfig } from '../../configs/load.ts';
import { runSft } from '../../trainer/sft/train.ts';
import { makeMicro } from './micro.ts';
import { initModel, baseKeptIds, PRESETS } from '../../model/init.ts';
import { listSftCheckpoints, sftLayout } from '../../trainer/sft/checkpoint.ts';
import { tokenLogprobs } from '../../model/index.ts';
import { loadPeftAdapter } from '../../model/lora/index.ts';

let root: string;
let modelDir: string;
let examples: string;

beforeAll(() => {
  ({ root, modelDir, examples } = makeMicro('gsteer-sft-train-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const cfgFor = (name: string) =>
  resolveConfig({
    runName: name,
    runDir: root,
    seed: 5,
    policy: { model: modelDir },
    trainer: { backend: 'cpu' },
    lora: { r: 2, alpha: 4, dropout: 0.05, targetModules: ['q_proj', 'v_proj', 'down_proj'] },
    sft: { examples, maxSteps: 4, batchSize: 3, microBatchSize: 2, learningRate: 0.05, heldOutFraction: 0.25, evalEvery: 2 },
    checkpoint: { every: 2, keep: 2 },
  });
const files = (dir: string) => ['adapter_config.json', 'adapter_model.safetensors'].map((f) => readFileSync(join(dir, f)));
const quiet = { log: () => {}, progress: false };

describe('runSft', () => {
  it('trains: the loss falls, held-out loss is reported, checkpoints are kept, a PEFT adapter is written', async () => {
    // The adapter GRPO starts from (loaded from the PEFT folder, as --init-adapter does) must
    // score exactly like the adapter SFT ended with, in memory.
    const ids = [[...Array(20).keys()].map((i) => (i * 7) % 50)];
    let trained: number[] = [];
    let reloaded: number[] = [];
    const r = await runSft(cfgFor('full'), {
      ...quiet,
      onTrained: (model, adapter) => {
        trained = [...tokenLogprobs(model, adapter, { inputIds: ids }).logprobs.dataSync()];
        const back = loadPeftAdapter(join(root, 'full', 'sft', 'adapter'), model);
        reloaded = [...tokenLogprobs(model, back, { inputIds: ids }).logprobs.dataSync()];
        const base = [...tokenLogprobs(model, null, { inputIds: ids }).logprobs.dataSync()];
        expect(base).not.toEqual(trained); // the adapter changed the model
        back.dispose();
      },
    });
    expect(trained.length).toBe(20);
    expect(reloaded).toEqual(trained);
    expect(r.steps).toBe(4);
    expect(r.heldOutExamples).toBeGreaterThan(0);
    expect(Number.isFinite(r.heldOutLoss)).toBe(true);
    const metrics = readFileSync(sftLayout(join(root, 'full')).metrics, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const losses = metrics.filter((m) => m.phase === 'sft').map((m) => m.loss as number);
    expect(losses.length).toBe(4);
    expect(losses[3]!).toBeLessThan(losses[0]!);
    expect(listSftCheckpoints(sftLayout(join(root, 'full')))).toEqual([2, 4]);
    const cfgJson = JSON.parse(readFileSync(join(r.adapterDir, 'adapter_config.json'), 'utf8'));
    expect(cfgJson.r).toBe(2);
    expect([...cfgJson.target_modules].sort()).toEqual(['down_proj', 'q_proj', 'v_proj']);
  });

  it('killed after update 2 and resumed, it writes the same adapter bytes as the uninterrupted run', async () => {
    const half = await runSft(cfgFor('resumed'), { ...quiet, haltAfter: 2 });
    expect(half.steps).toBe(2);
    await expect(runSft(cfgFor('resumed'), quiet)).rejects.toThrow(/--resume/);
    const r = await runSft(cfgFor('resumed'), { ...quiet, resume: true });
    expect(r.steps).toBe(4);
    expect(files(r.adapterDir)).toEqual(files(join(root, 'full', 'sft', 'adapter')));
  });

  it('refuses a model whose trimmed vocabulary lacks the target tokens, and says how to fix it', async () => {
    const bare = join(root, 'bare');
    initModel(
      bare,
      { ...PRESETS.tiny!, hiddenSize: 16, intermediateSize: 32, numHiddenLayers: 1, numAttentionHeads: 2, numKeyValueHeads: 1, headDim: 8 },
      { seed: 3, keptIds: baseKeptIds() },
    );
    const cfg = { ...cfgFor('bare'), policy: { ...cfgFor('bare').policy, model: bare } };
    await expect(runSft(cfg, quiet)).rejects.toThrow(/lacks \d+ distinct token ids.*--vocab-from/);
  });
});
