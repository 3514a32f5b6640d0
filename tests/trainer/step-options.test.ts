import { describe, it, expect } from 'vitest';
import { RunConfigSchema } from '../../configs/schema.ts';
import { grpoLossOptions, grpoStepOptions } from '../../trainer/step-options.ts';

describe('step options from the run config', () => {
  const cfg = RunConfigSchema.parse({});

  it('maps the paper defaults (method §5)', () => {
    const o = grpoStepOptions(cfg, 0, 210);
    expect(o.lr).toBe(1e-6);
    expect(o.maxGradNorm).toBe(1);
    expect(o.microBatchSize).toBe(4);
    expect(o.recompute).toBe(false);
    expect(o.grpo).toMatchObject({ lossType: 'grpo', epsilon: 0.2, betaKl: 0, tisCap: null });
    // dr_grpo constant: 12 turns x 384 tokens
    expect(grpoLossOptions(cfg).maxCompletionLength).toBe(12 * 384);
  });

  it('follows the cosine schedule with warmup, and seeds dropout per update', () => {
    const c = RunConfigSchema.parse({ grpo: { lrSchedule: 'cosine', warmupSteps: 10, learningRate: 1e-5 } });
    expect(grpoStepOptions(c, 0, 110).lr).toBe(0);
    expect(grpoStepOptions(c, 10, 110).lr).toBeCloseTo(1e-5, 12);
    expect(grpoStepOptions(c, 60, 110).lr).toBeCloseTo(5e-6, 12); // progress 50/100
    expect(grpoStepOptions(c, 3, 110).dropoutSeed).not.toBe(grpoStepOptions(c, 4, 110).dropoutSeed);
    expect(grpoStepOptions(c, 3, 110).dropoutSeed).toBe(grpoStepOptions(c, 3, 110).dropoutSeed);
  });
});
