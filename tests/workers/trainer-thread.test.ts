// workers/trainer-thread.ts: the trainer part in a worker thread gives the same stats and the
// same adapter bytes as the same part in the calling thread (here the synthetic one, chosen
// by GSTEER_PARTS as in a worker process), and an error inside the thread reaches the caller
// with its message.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../configs/load.ts';
import { syntheticParts } from '../../workers/synthetic/parts.ts';
import { threadTrainer } from '../../workers/trainer-thread.ts';
import type { TrainerPart, TrainSequence } from '../../workers/parts.ts';

const root = mkdtempSync(join(tmpdir(), 'gsteer-trainer-thread-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const cfg = resolveConfig({ runName: 'thr', runDir: root, seed: 3, data: { instances: ['unused.jsonl'] }, grpo: { learningRate: 0.1 } });
const batch: TrainSequence[] = [
  { promptIds: [1001, 1002], completionIds: [1005, 1006, 1007], oldLogprobs: [-1.2, -0.7, -2.0], advantage: 1.5, trajectory: 0 },
  { promptIds: [1001, 1002], completionIds: [1008, 1009], oldLogprobs: [-0.4, -1.1], advantage: -1.5, trajectory: 1 },
];
/** Stats without the wall-clock field. */
const stats = ({ train_seconds: _, ...rest }: Awaited<ReturnType<TrainerPart['step']>>) => rest;
const files = (dir: string) =>
  Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((f) => [f, readFileSync(join(dir, f)).toString('base64')]),
  );
const fresh = (name: string) => {
  const d = join(root, name);
  mkdirSync(d);
  return d;
};

describe('threadTrainer', () => {
  it('steps and saves exactly as the part does in the calling thread; errors carry their message', async () => {
    process.env.GSTEER_PARTS = 'synthetic';
    const local = await syntheticParts(cfg, 'thr').trainer();
    const thread = await threadTrainer(cfg, 'thr', { runDir: root, trainerUrl: null });
    try {
      await local.init(null);
      await thread.init(null);
      const want = [stats(await local.step(batch, 1)), stats(await local.step(batch, 2))];
      const got = [stats(await thread.step(batch, 1)), stats(await thread.step(batch, 2))];
      expect(want[0]!.loss).not.toBe(want[1]!.loss); // the step moved the policy
      expect(got).toEqual(want);
      await local.save(fresh('local'));
      await thread.save(fresh('thread'));
      expect(files(join(root, 'thread'))).toEqual(files(join(root, 'local')));
      await expect(thread.load(join(root, 'missing'))).rejects.toThrow(/missing/);
      expect(stats(await thread.step(batch, 3))).toEqual(stats(await local.step(batch, 3))); // still usable after an error
    } finally {
      await thread.close();
      delete process.env.GSTEER_PARTS;
    }
  }, 60_000);
});
