// What the reward reads and what it reports (method §4). Every component is kept separately
// so the reward curves can show each one (method §5 metrics), not only the total.
import type { Target } from '../data/schema.ts';
import type { EvidenceSlot, Termination } from '../core/types.ts';

export interface RewardInput {
  /** For error messages only. */
  instanceId?: string;
  /** E: the instance's elicitation targets (N = targets.length >= 1). */
  targets: Target[];
  /** Sigma_T: the final evidence state; only `status === 'covered'` slots enter the matching. */
  finalSlots: EvidenceSlot[];
  /** The question of every Ask turn, in order (n_rep, n_multi). */
  askedQuestions: string[];
  /** T_ask, T_ret. */
  askCount: number;
  retrieveCount: number;
  termination: Termination;
}

/** One pair of M* with positive similarity. */
export interface MatchedPair {
  targetId: string;
  slotName: string;
  similarity: number; // S_ij
}

export interface RewardBreakdown {
  /** R = r_align - c_acq - c_con - penalty_invalid - penalty_nonstop */
  reward: number;
  r_align: number; // alpha * coverage - beta * c_fp
  coverage: number; // Cov(tau, E), uniform or rubric-weighted
  c_fp: number; // (1/N) sum over covered slots (1 - s_hat_j)
  c_acq: number; // lambda_ask * t_ask + lambda_ret * t_ret
  c_con: number; // lambda_rep * n_rep + lambda_multi * n_multi
  n_rep: number;
  n_multi: number;
  t_ask: number;
  t_ret: number;
  penalty_invalid: number; // invalidPenalty when termination = invalid, else 0
  penalty_nonstop: number; // nonStopPenalty when termination = max_turns, else 0
  /** N and the number of covered final slots, for the curves. */
  n_targets: number;
  n_covered_slots: number;
  matches: MatchedPair[];
}

/** A scored trajectory: the total and every component (method §4, reported separately). */
export interface Scored {
  reward: number;
  components: Record<string, number>;
}
