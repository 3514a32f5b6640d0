// Learning-rate schedules, as Hugging Face transformers' get_constant_schedule_with_warmup
// and get_cosine_schedule_with_warmup (num_cycles 0.5): the multiplier is evaluated at the
// 0-based index of the update, so with warmup the first update runs at lr 0.
import type { GrpoConfig } from '../../configs/schema.ts';
import { InputError } from '../../util/errors.ts';

export interface ScheduleOptions {
  kind: GrpoConfig['lrSchedule'];
  baseLr: number;
  warmupSteps: number;
  /** Total updates of the run (cosine decays to 0 at this index). */
  totalSteps: number;
}

/** Learning rate of update `step` (0-based). */
export function lrAt(step: number, o: ScheduleOptions): number {
  if (o.kind === 'cosine' && o.totalSteps <= o.warmupSteps)
    throw new InputError(
      `cosine schedule: total updates (${o.totalSteps}) must exceed grpo.warmupSteps (${o.warmupSteps}); lower warmupSteps or raise passes / maxUpdates`,
    );
  if (o.warmupSteps > 0 && step < o.warmupSteps) return (o.baseLr * step) / o.warmupSteps;
  switch (o.kind) {
    case 'constant':
      return o.baseLr;
    case 'cosine': {
      const progress = (step - o.warmupSteps) / (o.totalSteps - o.warmupSteps);
      return o.baseLr * Math.max(0, 0.5 * (1 + Math.cos(Math.PI * progress)));
    }
    default: {
      const never: never = o.kind;
      throw new Error(`internal: unknown lrSchedule ${String(never)}`);
    }
  }
}
