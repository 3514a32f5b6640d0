// The demo's base recipe (cli/commands/demo-base.ts), run with a few updates per stage in
// place of thousands: the trunk and each branch are trained in sibling folders, the base is
// their mean (average.json names the three sources with the stages each went through; the
// branch with extra examples records their sha256), the sibling folders are gone, and the
// line the demo prints about the base says so.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256File } from '../../checkpoints/atomic.ts';
import { baseNote, remakeDemoBase } from '../../cli/commands/demo-base.ts';
import { loadConfig } from '../../configs/load.ts';
import { buildDemoExamples, SFT_DEMO_CONFIG } from '../../data/sft/demo-phases.ts';
import { loadModel } from '../../trainer/model/index.ts';

const tmp = mkdtempSync(join(tmpdir(), 'gsteer-demo-base-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Stage { steps: number; seed: number; splitSeed: number; examplesSha256: string; extraSha256?: string; previous?: Stage[] }

describe('remakeDemoBase', () => {
  it('trains a trunk and two branches (one on extra examples), writes their mean and removes the parts', async () => {
    const out = join(tmp, 'base');
    const configFiles = ['configs/demo.yaml'];
    const sets = [`policy.model=${out}`];
    const cfg = loadConfig(configFiles, sets);
    const sftExamples = join(tmp, 'examples.jsonl');
    await buildDemoExamples(loadConfig([...configFiles, SFT_DEMO_CONFIG], sets), sftExamples);
    const steps = (n: number, lr = '1e-3') => ['--pretrain-steps', String(n), '--pretrain-batch', '1', '--pretrain-lr', lr];
    const code = await remakeDemoBase({ cfg, configFiles, sets, sftExamples }, {
      stages: [steps(2, '5e-3'), steps(1)],
      branches: [{ seed: 7, args: steps(2), extra: true }, { seed: 42, args: steps(1), extra: false }],
    });
    expect(code).toBe(0);
    const rec = JSON.parse(readFileSync(join(out, 'average.json'), 'utf8')) as { sources: { dir: string; weight: number; pretrain: Stage }[] };
    expect(rec.sources.map((s) => s.dir)).toEqual([`${out}.trunk`, `${out}.branch-1`, `${out}.branch-2`]);
    expect(rec.sources.map((s) => s.weight)).toEqual([1 / 3, 1 / 3, 1 / 3]);
    const stages = rec.sources.map((s) => [...(s.pretrain.previous ?? []), s.pretrain]);
    // trunk: init + one stage; each branch: the trunk's two stages and its own
    expect(stages.map((st) => st.map((x) => x.steps))).toEqual([[2, 1], [2, 1, 2], [2, 1, 1]]);
    expect(stages.map((st) => st.at(-1)!.seed)).toEqual([42, 7, 42]);
    // one held-out split throughout, and only branch 1 saw the extra examples (built next to the SFT examples)
    expect(stages.flat().every((x) => x.splitSeed === 42 && x.examplesSha256 === sha256File(sftExamples))).toBe(true);
    expect(stages.map((st) => st.at(-1)!.extraSha256)).toEqual([undefined, sha256File(join(tmp, 'examples-extra.jsonl')), undefined]);
    for (const d of rec.sources.map((s) => s.dir)) expect(existsSync(d)).toBe(false);
    const model = await loadModel(out);
    expect(model.config.hiddenSize).toBe(64);
    model.dispose();
    expect(baseNote(out, sftExamples)).toBe(' (the mean of 3 models pretrained in 2 stage(s), 2 + 1 updates and 3 stage(s), 2 + 1 + 2 updates and 3 stage(s), 2 + 1 + 1 updates; recipe in its README.md)');
  }, 180_000);
});
