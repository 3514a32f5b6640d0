// Config fragment read only by `gsteer demo` (cli/demo/), mounted as `demo:` in configs/schema.ts:
// what a demo does around the `gsteer train` and `gsteer eval` runs it makes. `gsteer train`
// and `gsteer eval` ignore it.
import { z } from 'zod';

const positiveInt = z.number().int().positive();

export const DemoSchema = z
  .object({
    /**
     * The QREF demo's select phase (cli/demo/qref-select.ts): before RL, sample the SFT refiner
     * `episodes` times on every train question, under a seed stream of its own (not the
     * evaluation's), and train on the `questions` whose refined recall is furthest from solved
     * and unsolved (closest to 0.5; never a question solved in every episode): offline
     * pass-rate filtering of the prompts, as Skywork-OR1 and POLARIS filter by the initial
     * policy's pass rate and DAPO drops groups that are all right or all wrong. null: train on
     * grpo.trainIds (or every train question).
     */
    select: z
      .object({
        questions: positiveInt.default(8),
        episodes: z.number().int().min(2).default(8),
      })
      .strict()
      .nullable()
      .default(null),
  })
  .strict();
export type DemoConfig = z.output<typeof DemoSchema>;
