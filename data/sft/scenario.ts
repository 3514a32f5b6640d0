// method §7 scenario knobs: the target schedule (the order, drawn in orders.ts), which
// targets are memory hits, late activation (the IEG's lateActivatable flags, exercised by
// subgraphs that include those targets and by parents covered from memory vs dialogue) and
// the stopping point. Each (subgraph, order) pair is instantiated once per scenario kind:
//
//   kind          memory hits                          stopping point
//   dialogue      none                                 all active slots covered
//   memory_mixed  each target w.p. 0.5 (>= 1 hit)      all active slots covered
//   memory_all    every target                         all active slots covered
//   early_stop    each target w.p. 0.3                 sampled: after the essential targets
//                                                      are covered, before the rest
import type { Rng } from '../../util/rng.ts';

export const SCENARIO_KINDS = ['dialogue', 'memory_mixed', 'memory_all', 'early_stop'] as const;
export type ScenarioKind = (typeof SCENARIO_KINDS)[number];

interface Knobs {
  hitRate: number;
  atLeastOneHit: boolean;
  earlyStop: boolean;
}

const KNOBS: Record<ScenarioKind, Knobs> = {
  dialogue: { hitRate: 0, atLeastOneHit: false, earlyStop: false },
  memory_mixed: { hitRate: 0.5, atLeastOneHit: true, earlyStop: false },
  memory_all: { hitRate: 1, atLeastOneHit: false, earlyStop: false },
  early_stop: { hitRate: 0.3, atLeastOneHit: false, earlyStop: true },
};

export interface Scenario {
  kind: ScenarioKind;
  /** Target ids whose memory a Retrieve returns (subgraph order). */
  memoryHits: string[];
  /** Stop after this many Retrieve/Ask turns (null: stop when all active slots are covered). */
  stopAfter: number | null;
}

/** Whether `kind` draws its hits at random (so several memory-hit samples differ). */
export function hasRandomHits(kind: ScenarioKind): boolean {
  return KNOBS[kind].hitRate > 0 && KNOBS[kind].hitRate < 1;
}

export function wantsEarlyStop(kind: ScenarioKind): boolean {
  return KNOBS[kind].earlyStop;
}

/** Memory hits for `kind` over the subgraph's ids (deterministic for the rng state). */
export function sampleHits(kind: ScenarioKind, ids: readonly string[], rng: Rng): string[] {
  const k = KNOBS[kind];
  const hits = ids.filter(() => rng.next() < k.hitRate);
  if (k.atLeastOneHit && hits.length === 0 && ids.length > 0) return [ids[rng.int(ids.length)] as string];
  return hits;
}

/**
 * The sampled stopping point of an early_stop scenario, from the complete walk of the same
 * scenario: `essentialAt` = acquisitions (Retrieve/Ask turns) after which every essential
 * target was covered, `total` = acquisitions of the complete walk. Uniform in
 * [max(essentialAt, 1), total - 1]; null when that range is empty (nothing left to cut).
 */
export function sampleStop(essentialAt: number, total: number, rng: Rng): number | null {
  const lo = Math.max(essentialAt, 1);
  if (lo > total - 1) return null;
  return lo + rng.int(total - lo);
}
