// The QREF base's recipe runner (cli/demo/qref-base.ts) on a tiny recipe (a 1-layer model, a few
// updates per stage) with the real `gsteer model` commands: every stage records stage.json, the
// base gets recipe.json; a rerun skips the stages whose record matches, and one whose record is
// gone (an interrupted stage) is remade with every stage after it, from the same starting
// weights, giving the same bytes.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../configs/load.ts';
import { growQrefBase, RECIPE_RECORD, STAGE_RECORD, stageDir, type QrefBaseStage } from '../../cli/demo/qref-base.ts';
import { run as modelRun } from '../../cli/commands/model.ts';
import { writeQrefSftExamples } from '../../rollout/qref/sft-examples.ts';
import { sha256File } from '../../util/atomic.ts';

const dir = mkdtempSync(join(tmpdir(), 'gsteer-qref-base-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const STAGES: QrefBaseStage[] = [
  { init: { layers: 1, embedStd: 1 }, steps: 3, lr: '5e-3', augment: 1, seed: 42 },
  { steps: 2, lr: '3e-3', augment: 1, seed: 7, batch: 2, drill: 0.5, drillShape: 'prompt' },
  { expand: 1, steps: 2, lr: '2e-3', augment: 0.5, seed: 11 },
];

describe('growQrefBase', () => {
  it('grows stage by stage, records each, and resumes after the last finished stage', async () => {
    const examples = join(dir, 'examples.jsonl');
    writeQrefSftExamples(loadConfig(['configs/qref-demo.yaml']), examples);
    const out = join(dir, 'base');
    const calls: string[][] = [];
    const model = (argv: string[]) => (calls.push(argv), modelRun(argv));
    const ctx = { out, examples, vocabFrom: [examples], model, log: () => {} };
    const quiet = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      // an interrupted first growth: stage 3 fails (its command exits 2), stages 1 and 2 stay recorded
      const failing = { ...ctx, model: (argv: string[]) => (argv[0] === 'expand' ? Promise.resolve(2) : model(argv)) };
      expect(await growQrefBase(failing, STAGES)).toBe(2);
      expect([1, 2, 3].map((k) => existsSync(join(stageDir(out, k), STAGE_RECORD)))).toEqual([true, true, false]);
      expect(existsSync(out)).toBe(false);
      const stage2 = sha256File(join(stageDir(out, 2), 'model.safetensors'));
      // a stage's batch and drill share reach its command and its pretraining record; absent, batch 1 and no drills
      const batchOf = (argv: string[]) => argv[argv.indexOf('--pretrain-batch') + 1];
      expect(calls.map((c) => [c[0], batchOf(c)])).toEqual([
        ['init', '1'],
        ['pretrain', '2'],
      ]);
      expect(JSON.parse(readFileSync(join(stageDir(out, 2), 'pretrain.json'), 'utf8'))).toMatchObject({ batchSize: 2, drill: 0.5, drillShape: 'prompt' });
      // the init's embedding std and the drills' shape reach their commands
      const valueOf = (flag: string) => (argv: string[]) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : null);
      expect(calls.map(valueOf('--embed-std'))).toEqual(['1', null]);
      expect(calls.map(valueOf('--pretrain-drill-shape'))).toEqual([null, 'prompt']);
      // a stage's drill share reaches its command only when it has one
      expect(calls.map(valueOf('--pretrain-drill'))).toEqual([null, '0.5']);

      // the rerun skips stages 1-2 and runs only stage 3 (expand + pretrain)
      calls.length = 0;
      expect(await growQrefBase(ctx, STAGES)).toBe(0);
      expect(calls.map((c) => c[0])).toEqual(['expand', 'pretrain']);
      expect(calls[0]!.at(-1)).toBe(stageDir(out, 2));
      const recipe = JSON.parse(readFileSync(join(out, RECIPE_RECORD), 'utf8')) as {
        stages: { stage: number; spec: QrefBaseStage; fromSha256: string | null; examplesSha256: string; lastLoss: number }[];
      };
      expect(recipe.stages.map((s) => [s.stage, s.spec.steps])).toEqual([
        [1, 3],
        [2, 2],
        [3, 2],
      ]);
      expect(recipe.stages[2]!.fromSha256).toBe(stage2);
      expect(recipe.stages.every((s) => s.examplesSha256 === sha256File(examples) && Number.isFinite(s.lastLoss))).toBe(true);
      expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).num_hidden_layers).toBe(2);
      expect([1, 2, 3].some((k) => existsSync(stageDir(out, k)))).toBe(false); // the stage folders go once the base is written
      const grown = sha256File(join(out, 'model.safetensors'));

      // the same recipe from scratch writes the same bytes (step caps, wasm)
      rmSync(out, { recursive: true });
      calls.length = 0;
      expect(await growQrefBase(ctx, STAGES)).toBe(0);
      expect(calls.map((c) => c[0])).toEqual(['init', 'pretrain', 'expand', 'pretrain']);
      expect(sha256File(join(out, 'model.safetensors'))).toBe(grown);
    } finally {
      quiet.mockRestore();
    }
  }, 240_000);
});
