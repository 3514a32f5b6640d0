// One G-STEER SFT example (method §7): a step of a scaffolded trajectory, its input the
// messages the policy sees at that turn, its target the next turn's text. Built by
// rollout/sft-examples.ts, trained on by trainer/sft/.
import { z } from 'zod';
import { SCENARIO_KINDS } from './scenario.ts';

/** One line of the examples JSONL (`gsteer sft build --out FILE`). */
export const SftExampleSchema = z
  .object({
    instanceId: z.string().min(1),
    userId: z.string().min(1),
    trajectoryId: z.string().min(1),
    kind: z.enum(SCENARIO_KINDS),
    step: z.number().int().min(0), // 0-based index in the trajectory
    steps: z.number().int().positive(), // trajectory length
    action: z.enum(['RETRIEVE', 'ASK', 'STOP']),
    input: z.array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() }).strict()).min(1),
    target: z.string().min(1),
  })
  .strict();
export type SftExample = z.output<typeof SftExampleSchema>;
