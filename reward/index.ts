// method §4: the target-anchored trajectory reward
//   R(tau, E) = R_align - C_acq - C_con   (minus invalid / non-stop penalties)
// with every component reported separately. The pieces: alignment.ts (Cov, C_FP, M*),
// questions.ts (n_rep, n_multi), costs.ts (C_acq, C_con, penalties).
import type { RewardConfig } from '../configs/schema.ts';
import { InputError } from '../util/errors.ts';
import type { Encoder } from '../core/encoder.ts';
import { alignment } from './alignment.ts';
import { acquisitionCost, conductCost, terminationPenalties } from './costs.ts';
import { countMultiQuestion, countRepeated } from './questions.ts';
import type { RewardBreakdown, RewardInput } from './types.ts';

export type { RewardBreakdown, RewardInput, MatchedPair } from './types.ts';
export { rewardInputFromTrajectory } from './input.ts';
export { dialogueSlots } from './dialogue-slots.ts';

function checkInput(input: RewardInput, where: string): void {
  if (input.targets.length === 0)
    throw new InputError(`${where}: the instance has no targets, so Cov and C_FP (divided by N = |E|) are undefined; give the instance at least one target`);
  for (const [field, v] of [
    ['askCount', input.askCount],
    ['retrieveCount', input.retrieveCount],
  ] as const)
    if (!Number.isInteger(v) || v < 0) throw new InputError(`${where}: ${field} = ${v}: must be a non-negative integer`);
}

export async function computeReward(input: RewardInput, cfg: RewardConfig, encoder: Encoder): Promise<RewardBreakdown> {
  const where = input.instanceId ? `instance ${input.instanceId}` : 'reward';
  checkInput(input, where);
  const align = await alignment(input.targets, input.finalSlots, cfg, encoder, where);
  const n_rep = await countRepeated(input.askedQuestions, cfg.repetitionThreshold, encoder);
  const n_multi = countMultiQuestion(input.askedQuestions);
  const t_ask = input.askCount;
  const t_ret = input.retrieveCount;
  const c_acq = acquisitionCost(t_ask, t_ret, cfg);
  const c_con = conductCost(n_rep, n_multi, cfg);
  const { penalty_invalid, penalty_nonstop } = terminationPenalties(input.termination, cfg);
  return {
    reward: align.r_align - c_acq - c_con - penalty_invalid - penalty_nonstop,
    r_align: align.r_align,
    coverage: align.coverage,
    c_fp: align.c_fp,
    c_acq,
    c_con,
    n_rep,
    n_multi,
    t_ask,
    t_ret,
    penalty_invalid,
    penalty_nonstop,
    n_targets: input.targets.length,
    n_covered_slots: input.finalSlots.filter((s) => s.status === 'covered').length,
    matches: align.matches,
  };
}
