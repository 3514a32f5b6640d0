// Generalized advantage estimation (Schulman et al. 2016, arXiv:1506.02438) over per-token
// rewards, in verl's convention (verl/trainer/ppo/core_algos.py compute_gae_advantage_return;
// OpenRLHF computes the same on contiguous responses). The paper trained its refiner with
// verl's PPO with GAE (the QREF paper, method §13.3).
//
// Convention, for one sequence, positions t over the response, mask m_t (1 = a token the
// policy generated; 0 = padding, or an observation token inside a multi-turn response):
//   - only masked-in positions are MDP steps; a masked-out position is skipped, carrying
//     the next step's value and running advantage across it (verl: "skip values and
//     TD-error on observation tokens"), so observation tokens neither earn nor cut credit;
//   - the value after the last generated token is 0 (the episode ends there: terminal);
//   - for consecutive steps s < s' (s' the next masked-in position after s):
//       delta_s = r_s + gamma * V_s' - V_s           (V after the last step = 0)
//       A_s     = delta_s + gamma * lambda * A_s'     (A after the last step = 0)
//       G_s     = A_s + V_s                           (the returns the critic regresses on)
//   - advantages and returns are 0 at masked-out positions (verl leaves carried values
//     there; no loss reads them).
// lambda = 1 gives A_s = (reward-to-go) - V_s with gamma-discounting, so G_s is the
// discounted reward-to-go; lambda = 0 gives one-step TD, A_s = delta_s. Advantages are then
// whitened over the mask (masked.ts) as verl does; the returns are not.
import { assertShapes, maskedWhiten, type Matrix } from './masked.ts';

export interface Gae {
  advantages: Matrix; // [B, T] raw A, 0 off the mask
  returns: Matrix; // [B, T] G = A + V, 0 off the mask
}

export function gae(rewards: Matrix /* [B, T] */, values: Matrix /* [B, T] */, mask: Matrix /* [B, T] */, gamma: number, lambda: number): Gae {
  assertShapes(mask, rewards, values);
  const advantages: Matrix = [];
  const returns: Matrix = [];
  rewards.forEach((r, i) => {
    const v = values[i] as number[];
    const m = mask[i] as number[];
    const T = r.length;
    const adv = new Array<number>(T).fill(0);
    const ret = new Array<number>(T).fill(0);
    let nextValue = 0; // V of the next masked-in step (0 past the end: terminal)
    let nextAdv = 0; // A of the next masked-in step
    for (let t = T - 1; t >= 0; t--) {
      if (!m[t]) continue; // skipped: nextValue and nextAdv carry across
      const delta = (r[t] as number) + gamma * nextValue - (v[t] as number);
      const a = delta + gamma * lambda * nextAdv;
      adv[t] = a;
      ret[t] = a + (v[t] as number);
      nextValue = v[t] as number;
      nextAdv = a;
    }
    advantages.push(adv);
    returns.push(ret);
  });
  return { advantages, returns };
}

/** verl's compute_gae_advantage_return: GAE, then the advantages whitened over the mask (when `whiten`). */
export function gaeAdvantageReturn(rewards: Matrix, values: Matrix, mask: Matrix, gamma: number, lambda: number, whiten = true): Gae {
  const g = gae(rewards, values, mask, gamma, lambda);
  return whiten ? { advantages: maskedWhiten(g.advantages, mask), returns: g.returns } : g;
}
