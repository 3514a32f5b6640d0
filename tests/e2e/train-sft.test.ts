// E2E (real parts, micro model): `gsteer train` with sft.enabled and no --init-adapter runs
// the SFT stage first (LoRA SFT, held-out loss, valid-turn check) and starts GRPO from the
// adapter it wrote (run.json names it; GRPO's first adapter version differs from it only
// by one update). A used run directory is refused before any SFT work.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeMicro } from '../sft/micro.ts';
import { cli, removeRuns, reproducibleMetrics, tempRun, writeConfig } from './helpers.ts';

const t = tempRun('train-sft');
const micro = makeMicro('gsteer-e2e-train-sft-');
afterAll(() => removeRuns(t, { dir: micro.root, prefix: t.prefix }));

describe('e2e: gsteer train with sft.enabled', () => {
  it('trains the SFT adapter, then runs GRPO from it', async () => {
    const cfg = {
      runName: 'sft-grpo',
      runDir: join(t.dir, 'runs'),
      seed: 4,
      data: { instances: [t.instances], userStates: join(t.dir, 'none.jsonl') },
      policy: { server: 'embedded', model: micro.modelDir },
      rollout: { groupSize: 2, maxTurns: 1, maxTokens: 8, concurrency: 2, constrained: false }, // 8 tokens: shorter than any turn of the policy grammar
      grpo: { maxUpdates: 1, learningRate: 1e-3, microBatchSize: 2 },
      lora: { r: 2, alpha: 4, targetModules: ['q_proj', 'v_proj'] },
      trainer: { backend: 'cpu' },
      sft: {
        enabled: true,
        examples: micro.examples,
        maxSteps: 2,
        batchSize: 4,
        microBatchSize: 4,
        learningRate: 1e-2,
        heldOutFraction: 0.3,
        evalEvery: 2,
        evalMaxExamples: 2,
        evalTurns: 2,
      },
      queues: { prefix: t.prefix },
    };
    const file = writeConfig(t.dir, cfg);
    const x = await cli(['train', '--config', file], { GSTEER_PARTS: 'real' }).done;
    expect(x.code, x.stderr).toBe(0);
    expect(x.stderr).toMatch(/sft: 2 updates in/);
    expect(x.stderr).toMatch(/sft: after SFT: valid turns \d+\/2/);
    const runDir = join(t.dir, 'runs', 'sft-grpo');
    const adapter = join(runDir, 'sft', 'adapter');
    expect(existsSync(join(adapter, 'adapter_model.safetensors'))).toBe(true);
    expect(JSON.parse(readFileSync(join(runDir, 'run.json'), 'utf8')).initAdapter).toBe(adapter);
    expect(reproducibleMetrics(runDir).map((m) => m.step)).toEqual([1]);

    // The same run directory again: refused at once, before the SFT stage.
    const again = await cli(['train', '--config', file], { GSTEER_PARTS: 'real' }).done;
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds a run; continue it with gsteer resume/);
    expect(again.stderr).not.toMatch(/sft: /);
  }, 180_000);
});
