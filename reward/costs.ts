// method §4 costs and penalties, pure given the counts.
//   C_acq = lambda_ask * T_ask + lambda_ret * T_ret
//   C_con = lambda_rep * n_rep + lambda_multi * n_multi
import type { RewardConfig } from '../configs/schema.ts';
import type { Termination } from '../core/types.ts';

export function acquisitionCost(tAsk: number, tRet: number, cfg: RewardConfig): number {
  return cfg.lambdaAsk * tAsk + cfg.lambdaRet * tRet;
}

export function conductCost(nRep: number, nMulti: number, cfg: RewardConfig): number {
  return cfg.lambdaRep * nRep + cfg.lambdaMulti * nMulti;
}

/**
 * Termination penalties (method §3-§4). The episode's alignment is still counted, on the
 * final evidence state at the point the episode ended (for an invalid turn: the last state
 * that parsed), so one formula covers every episode:
 *   R = R_align - C_acq - C_con - penalty_invalid - penalty_nonstop.
 * Why keep R_align for an invalid episode: with the paper's numbers (invalidPenalty 1.0 =
 * alpha 1.0 = the largest possible alpha * Cov) an invalid episode can never score above a
 * valid one with the same costs and no coverage, so the penalty dominates as the paper
 * intends, while the group still ranks invalid episodes by what they had gathered instead
 * of flattening them to one value (which would make all-invalid groups zero-variance and
 * carry no gradient). The small non-stop penalty (0.2) only makes sense on top of the
 * alignment, so the same rule holds there.
 */
export function terminationPenalties(t: Termination, cfg: RewardConfig): { penalty_invalid: number; penalty_nonstop: number } {
  switch (t) {
    case 'stop':
      return { penalty_invalid: 0, penalty_nonstop: 0 };
    case 'invalid':
      return { penalty_invalid: cfg.invalidPenalty, penalty_nonstop: 0 };
    case 'max_turns':
      return { penalty_invalid: 0, penalty_nonstop: cfg.nonStopPenalty };
  }
}
