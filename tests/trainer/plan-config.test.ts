// The memory plan of a run config (trainer/plan-config.ts; issue 33 item 2): paper.yaml fits the
// A100-80GB it declares; the stages are planned with the config's own knobs; and `gsteer train`
// refuses, with the plan, a config that does not fit its device before anything starts (no run
// directory, no Redis contact: the queue URL points at a closed port).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../configs/load.ts';
import { RunConfigSchema } from '../../configs/schema.ts';
import { checkFits, deviceOf, fitReport, modelShape, stagePlans, WASM_HEAP_BYTES } from '../../trainer/plan-config.ts';
import { planMemory } from '../../trainer/plan.ts';
import { QWEN3_SHAPES } from '../../model/qwen3-shapes.ts';
import { InputError } from '../../util/errors.ts';
import { cli, e2eConfig, tempRun, writeConfig } from '../e2e/helpers.ts';

describe('the paper preset', () => {
  it('fits the A100-80GB it declares (Qwen3-8B, fp32, micro-batch 1 x sft.maxSeqLen, recompute)', () => {
    const cfg = loadConfig(['configs/paper.yaml'], []);
    expect(cfg.trainer.device).toBe('A100-80GB');
    expect(modelShape(cfg.policy.model)?.config).toEqual(QWEN3_SHAPES['Qwen3-8B']);
    const stages = stagePlans(cfg, QWEN3_SHAPES['Qwen3-8B']!);
    expect(stages.map((s) => [s.stage, s.options.microBatch, s.options.seqLen, s.options.recompute])).toEqual([
      ['sft', 1, 2048, true],
      ['grpo', 1, 2048, true],
    ]);
    expect(stagePlans(cfg, QWEN3_SHAPES['Qwen3-8B']!, 'sft').map((s) => s.stage)).toEqual(['sft']); // what gsteer sft train checks
    // the plan of trainer/plan.ts with the same options (not a number of its own)
    for (const s of stages) expect(s.total).toBe(planMemory(QWEN3_SHAPES['Qwen3-8B']!, s.options).at(-1)!.bytes);
    const r = checkFits(cfg);
    expect(r.fits).toBe(true);
    expect(r.summary).toMatch(/on A100-80GB \(72\.00 GiB usable\): fits$/);
    // the preset as it was (micro-batch 4, no recompute) does not
    const before = loadConfig(['configs/paper.yaml'], ['grpo.microBatchSize=4', 'sft.microBatchSize=4', 'grpo.gradientCheckpointing=false']);
    expect(fitReport(before).fits).toBe(false);
    expect(() => checkFits(before)).toThrow(InputError);
    expect(() => checkFits(before)).toThrow(/does NOT fit A100-80GB[\s\S]*lower grpo\.microBatchSize/);
  });

  it('devices: a named GPU, the wasm heap; an unknown GPU name is refused with the names', () => {
    const c = (over: Record<string, unknown>) => RunConfigSchema.parse({ trainer: over });
    expect(deviceOf(c({ backend: 'gpu', device: 'H100-80GB' }))?.capacityBytes).toBe(80 * 2 ** 30);
    expect(deviceOf(c({ backend: 'gpu' }))).toBeNull();
    expect(deviceOf(c({ backend: 'wasm' }))?.usableBytes).toBe(0.9 * WASM_HEAP_BYTES);
    expect(() => deviceOf(c({ backend: 'gpu', device: 'A100' }))).toThrow(
      /trainer\.device = "A100" is not a GPU gsteer plans for; use one of A100-40GB, A100-80GB, H100-80GB/,
    );
  });
});

const t = tempRun('plan');
afterAll(() => rmSync(t.dir, { recursive: true, force: true }));

describe('gsteer train', () => {
  it('refuses, with the plan, a config that does not fit its device, before anything starts', async () => {
    const cfg = writeConfig(
      t.dir,
      e2eConfig(t, 'too-big', {
        trainer: { backend: 'wasm' },
        policy: { server: 'embedded', model: 'models/tiny-demo' },
        grpo: { microBatchSize: 4096, maxUpdates: 1 },
        sft: { maxSeqLen: 8192 },
        queues: { prefix: t.prefix, redisUrl: 'redis://127.0.0.1:1' }, // nothing may talk to it
      }),
    );
    const x = await cli(['train', '--config', cfg]).done;
    expect(x.code).toBe(2);
    expect(x.stderr).toMatch(/grpo: micro-batch 4096 x 8192 tokens, recompute off: .* does NOT fit the wasm heap/);
    expect(x.stderr).toMatch(/logits \[B,T,V\]/); // the plan's lines
    expect(x.stderr).toContain('the run does not fit its device');
    expect(x.stderr).not.toMatch(/redis/i);
    expect(existsSync(join(t.dir, 'runs', 'too-big'))).toBe(false);
  }, 60_000);
});
