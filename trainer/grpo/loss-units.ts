// The unit of the GRPO loss (method §5.5): each policy turn (a row of the update batch) or
// each trajectory (all rows of one trajectory, whatever their number). Counted over the whole
// update so that micro-batches, which may split a trajectory's turns, still sum to the
// full-batch loss: under lossType grpo a row's token sum is divided by its unit's token count
// and the total by the number of units; dr_grpo divides by units x L_max.
import { InputError } from '../../util/errors.ts';
import type { LossAggregation } from './loss.ts';

export interface LossUnits {
  units: number; // loss units of the whole batch
  unitTokens: number[]; // [B] loss tokens of each row's unit
}

/** rowTokens [B]: loss tokens of each row; trajectories [B]: each row's trajectory (any id). */
export function lossUnits(rowTokens: readonly number[], aggregation: LossAggregation, trajectories?: readonly number[]): LossUnits {
  if (aggregation === 'turn') return { units: rowTokens.length, unitTokens: [...rowTokens] };
  if (!trajectories)
    throw new InputError(
      'train batch: grpo.lossAggregation is "trajectory" but the batch does not say which trajectory each row belongs to (trajectories); pass them or set grpo.lossAggregation=turn',
    );
  if (trajectories.length !== rowTokens.length)
    throw new InputError(`train batch: ${trajectories.length} trajectory ids for ${rowTokens.length} sequences; one per sequence`);
  const total = new Map<number, number>();
  trajectories.forEach((t, b) => total.set(t, (total.get(t) ?? 0) + rowTokens[b]!));
  return { units: total.size, unitTokens: trajectories.map((t) => total.get(t)!) };
}
