// The demo's base recipe (cli/demo/base.ts), run with a few updates per stage in
// place of thousands: the trunk and each branch are trained in sibling folders; round 1's
// model is the mean of the trunk and its branches, round 2 expands that mean by a layer and
// takes the mean of the expanded start and its branch, round 3 (mean: false) trains one branch
// from that mean, also on examples built with other builder seeds, and keeps it. The records
// nest (average.json names the sources with the stages each went through, expand.json its
// source with that source's average.json; a branch with extra examples records their
// sha256), the sibling folders are gone, and the line the demo prints about the base says so.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256File } from '../../util/atomic.ts';
import { baseNote, DEMO_BASE_EXTRAS, remakeDemoBase } from '../../cli/demo/base.ts';
import { loadConfig } from '../../configs/load.ts';
import { buildDemoExamples, SFT_DEMO_CONFIG } from '../../cli/demo/sft-phases.ts';
import { loadModel } from '../../model/index.ts';

const tmp = mkdtempSync(join(tmpdir(), 'gsteer-demo-base-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Stage {
  steps: number;
  seed: number;
  splitSeed: number;
  examplesSha256: string;
  extraSha256?: string;
  previous?: Stage[];
}
interface Sources {
  dir: string;
  weight: number;
  pretrain?: Stage;
  average?: { sources: Sources[] };
  expand?: { groups: number; source: Sources };
}

describe('remakeDemoBase', () => {
  it("trains a trunk, a round of two branches (one on extra examples), an expanded round, a kept branch on other seeds' examples, and removes the parts", async () => {
    const out = join(tmp, 'base');
    const configFiles = ['configs/demo.yaml'];
    const sets = [`policy.model=${out}`];
    const cfg = loadConfig(configFiles, sets);
    const sftExamples = join(tmp, 'examples.jsonl');
    await buildDemoExamples(loadConfig([...configFiles, SFT_DEMO_CONFIG], sets), sftExamples);
    const steps = (n: number, lr = '1e-3') => ['--pretrain-steps', String(n), '--pretrain-batch', '1', '--pretrain-lr', lr];
    const code = await remakeDemoBase(
      { cfg, configFiles, sets, sftExamples },
      {
        stages: [steps(2, '5e-3'), steps(1)],
        rounds: [
          {
            branches: [
              { seed: 7, args: steps(2), extra: 'ratios' },
              { seed: 42, args: steps(1) },
            ],
          },
          { expandGroups: 1, branches: [{ seed: 11, args: steps(1) }] },
          { branches: [{ seed: 23, args: steps(1), extra: 'seeds' }], mean: false },
        ],
        extras: { ...DEMO_BASE_EXTRAS, seeds: { ...DEMO_BASE_EXTRAS.seeds, seeds: [1, 2] } },
      },
    );
    expect(code).toBe(0);
    // round 3: the base is its one branch, trained from round 2's mean on the seed-1 and seed-2 builds, one after the other
    const seedsFile = join(tmp, 'examples-seeds.jsonl');
    const lines = (f: string) => readFileSync(f, 'utf8').split('\n').filter(Boolean);
    const perSeed = await Promise.all(
      [1, 2].map(async (seed) => {
        const f = join(tmp, `seed-${seed}.jsonl`);
        await buildDemoExamples(loadConfig([...configFiles, SFT_DEMO_CONFIG], [...sets, `seed=${seed}`]), f);
        return lines(f);
      }),
    );
    expect(lines(seedsFile)).toEqual(perSeed.flat());
    expect(perSeed[0]).not.toEqual(perSeed[1]); // another seed, other scenarios
    const kept = JSON.parse(readFileSync(join(out, 'pretrain.json'), 'utf8')) as Stage;
    expect([kept.steps, kept.seed, kept.extraSha256]).toEqual([1, 23, sha256File(seedsFile)]);
    expect(existsSync(`${out}.r3-branch-1`)).toBe(false);
    // round 2: the mean of its expanded start and its branch (the kept branch's start)
    const rec = JSON.parse(readFileSync(join(out, 'average.json'), 'utf8')) as { sources: Sources[] };
    expect(rec.sources.map((s) => s.dir)).toEqual([`${out}.r2-start`, `${out}.r2-branch-1`]);
    expect(existsSync(`${out}.r2-mean`)).toBe(false);
    expect(rec.sources.map((s) => s.weight)).toEqual([1 / 2, 1 / 2]);
    expect(rec.sources[1]!.pretrain!.steps).toBe(1);
    expect(rec.sources[1]!.pretrain!.seed).toBe(11);
    // the expanded start was made from round 1's mean of the trunk and its two branches
    const r1 = rec.sources[0]!.expand!.source;
    expect(rec.sources[0]!.expand!.groups).toBe(1);
    expect(r1.dir).toBe(`${out}.r1-mean`);
    const sources1 = r1.average!.sources;
    expect(sources1.map((s) => s.dir)).toEqual([`${out}.trunk`, `${out}.r1-branch-1`, `${out}.r1-branch-2`]);
    const stages = sources1.map((s) => [...(s.pretrain!.previous ?? []), s.pretrain!]);
    // trunk: init + one stage; each branch: the trunk's two stages and its own
    expect(stages.map((st) => st.map((x) => x.steps))).toEqual([
      [2, 1],
      [2, 1, 2],
      [2, 1, 1],
    ]);
    expect(stages.map((st) => st.at(-1)!.seed)).toEqual([42, 7, 42]);
    // one held-out split throughout, and only round 1's branch 1 saw the extra examples (built next to the SFT examples)
    expect([...stages.flat(), rec.sources[1]!.pretrain!].every((x) => x.splitSeed === 42 && x.examplesSha256 === sha256File(sftExamples))).toBe(true);
    expect(stages.map((st) => st.at(-1)!.extraSha256)).toEqual([undefined, sha256File(join(tmp, 'examples-extra.jsonl')), undefined]);
    for (const d of [...sources1.map((s) => s.dir), r1.dir, ...rec.sources.map((s) => s.dir)]) expect(existsSync(d)).toBe(false);
    const model = await loadModel(out);
    expect([model.config.hiddenSize, model.config.numHiddenLayers]).toEqual([64, 3]);
    model.dispose();
    // distinct stages: trunk 2 + 1, round-1 branches 2 and 1, round-2 branch 1, round-3 branch 1 = 6 stages, 8 updates
    expect(baseNote(out, sftExamples)).toBe(
      ' (3 layers; 6 warm-up stage(s), 8 updates in all, 2 mean(s) of branches, 1 layer expansion(s); recipe in its README.md)',
    );
    expect(baseNote(out, join(tmp, 'examples-extra.jsonl'))).toMatch(/differ from the ones it was pretrained on/);
  }, 240_000);

  it('refuses a round that keeps its branch (mean: false) with more than one branch, before training anything', async () => {
    const out = join(tmp, 'refused');
    const cfg = loadConfig(['configs/demo.yaml'], [`policy.model=${out}`]);
    const branch = { seed: 1, args: ['--pretrain-steps', '1'] };
    await expect(
      remakeDemoBase(
        { cfg, configFiles: ['configs/demo.yaml'], sets: [], sftExamples: join(tmp, 'none.jsonl') },
        {
          stages: [['--pretrain-steps', '1']],
          rounds: [{ branches: [branch, { ...branch, seed: 2 }], mean: false }],
        },
      ),
    ).rejects.toThrow('round 1 has mean: false and 2 branches; a round that keeps its branch takes exactly one');
    expect(existsSync(`${out}.trunk`)).toBe(false);
  });
});
