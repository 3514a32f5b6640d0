// A generic SFT example: chat messages in, target text out (the assistant turn the loss is
// taken on). Any environment's demonstrations become this (QREF's refiner demonstrations via
// rollout/qref/sft-example.ts), so an SFT trainer needs no knowledge of the task. G-STEER's
// step examples (data/sft/example.ts) carry the same `input` and `target` fields plus their
// own bookkeeping.
import { z } from 'zod';

export const ChatMessageSchema = z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() }).strict();
export type ChatMessage = z.output<typeof ChatMessageSchema>;

export const ChatSftExampleSchema = z
  .object({
    id: z.string().min(1),
    input: z.array(ChatMessageSchema).min(1),
    target: z.string().regex(/\S/, 'must contain a non-space character'),
    /** Free bookkeeping (task, split, source record id), never shown to the model. */
    meta: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
  })
  .strict();
export type ChatSftExample = z.output<typeof ChatSftExampleSchema>;
