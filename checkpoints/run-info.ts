// run.json: what every process of a run needs besides the config (run id, resume epoch,
// the policy server and trainer service URLs when gsteer started them, the adapter GRPO started from).
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { writeFileAtomic } from '../util/atomic.ts';
import type { RunLayout } from './layout.ts';
import { InputError } from '../util/errors.ts';

export const RunInfoSchema = z
  .object({
    v: z.literal(1),
    runId: z.string().regex(/^[A-Za-z0-9._-]+$/),
    epoch: z.number().int().min(0),
    createdAt: z.string(),
    policyUrl: z.string().nullable(),
    /** The trainer service gsteer started (trainer.engine embedded; method §5.13); absent in runs before issue 31. */
    trainerUrl: z.string().nullable().optional(),
    initAdapter: z.string().nullable(),
  })
  .strict();
export type RunInfo = z.output<typeof RunInfoSchema>;

export function readRunInfo(layout: RunLayout): RunInfo {
  if (!existsSync(layout.runJson))
    throw new InputError(`${layout.runJson} not found; ${layout.root} is not a gsteer run directory (start one with gsteer train)`);
  const r = RunInfoSchema.safeParse(JSON.parse(readFileSync(layout.runJson, 'utf8')));
  if (!r.success) throw new InputError(`${layout.runJson} is malformed: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data;
}

export function writeRunInfo(layout: RunLayout, info: RunInfo): void {
  writeFileAtomic(layout.runJson, `${JSON.stringify(info, null, 2)}\n`);
}
