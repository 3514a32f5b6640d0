// method §7: all scaffolded trajectories of a set of training instances. Per instance:
// subgraphs (backbone + optional ratios) x prioritized orders x scenario kinds, each walked
// by rule (trajectory.ts). Every random choice comes from Rng.derive(seed, 'sft', instance
// id, ...), so one instance's trajectories do not depend on the others (same seed, same
// output, in any instance order).
import type { Instance } from '../schema.ts';
import { backbone, hopsFrom } from '../ieg.ts';
import { Rng } from '../../util/rng.ts';
import type { OfflineMemory } from './memory.ts';
import { prioritizedOrders, randomOrders, type Rank } from './orders.ts';
import { SCENARIO_KINDS, sampleHits, sampleStop, wantsEarlyStop, type Scenario, type ScenarioKind } from './scenario.ts';
import { subgraphs } from './subgraphs.ts';
import { templateTeacher, type Teacher } from './teacher.ts';
import { walk, type SftStep } from './trajectory.ts';

export interface SftTrajectory {
  id: string; // `${instanceId}/s${subgraph}/o${order}/${kind}`
  instanceId: string;
  userId: string;
  ratio: number;
  subgraph: string[];
  order: string[];
  scenario: Scenario;
  steps: SftStep[];
}

export interface BuildOptions {
  seed: number;
  optionalRatios: readonly number[];
  ordersPerSubgraph: number;
  maxTurns: number;
  topK: number;
  memory: OfflineMemory;
  teacher?: Teacher;
  kinds?: readonly ScenarioKind[];
  /** sft.order: `ieg` (method §7, default) or `random` (the ablation: random target orders, acquisitions ignore the IEG). */
  order?: 'ieg' | 'random';
  /** variant: `clarifier` builds Ask/Stop trajectories (no memory: scenario kinds dialogue and early_stop). */
  variant?: 'gsteer' | 'clarifier';
}

/** The clarifier has no memory: only the scenario kinds that do not depend on memory hits. */
export const CLARIFIER_KINDS: readonly ScenarioKind[] = ['dialogue', 'early_stop'];

/** Backbone targets rank 0; an optional target ranks by its hop distance to the backbone. */
export function backboneRank(g: Instance): Rank {
  const core = backbone(g);
  const hops = hopsFrom(g, core);
  const far = g.targets.length + 1;
  return (id) => (core.has(id) ? 0 : (hops.get(id) ?? far));
}

export async function buildInstance(inst: Instance, o: BuildOptions): Promise<SftTrajectory[]> {
  const teacher = o.teacher ?? templateTeacher;
  const rank = backboneRank(inst);
  const out: SftTrajectory[] = [];
  const subs = subgraphs(inst, o.optionalRatios, Rng.derive(o.seed, 'sft', inst.id, 'subgraphs'));
  for (const [si, sub] of subs.entries()) {
    const random = o.order === 'random';
    const orderRng = Rng.derive(o.seed, 'sft', inst.id, 'orders', si);
    const orders = random ? randomOrders(sub.ids, o.ordersPerSubgraph, orderRng) : prioritizedOrders(inst, sub.ids, o.ordersPerSubgraph, rank, orderRng);
    for (const [oi, order] of orders.entries()) {
      const clarifier = o.variant === 'clarifier';
      for (const kind of o.kinds ?? (clarifier ? CLARIFIER_KINDS : SCENARIO_KINDS)) {
        const rng = Rng.derive(o.seed, 'sft', inst.id, 'scenario', si, oi, kind);
        const scenario: Scenario = { kind, memoryHits: clarifier ? [] : sampleHits(kind, sub.ids, rng), stopAfter: null };
        const ctx = { instance: inst, memory: o.memory, maxTurns: o.maxTurns, topK: o.topK, respectIeg: !random, clarifier };
        if (wantsEarlyStop(kind)) {
          // The stopping point is sampled from the complete walk of the same scenario.
          const full = await walk({ ...ctx, teacher: templateTeacher }, order, scenario);
          const stop = full.essentialAt === null ? null : sampleStop(full.essentialAt, full.acquisitions, rng);
          if (stop === null) continue; // nothing to cut: the complete trajectory is already built
          scenario.stopAfter = stop;
        }
        const { steps } = await walk({ ...ctx, teacher }, order, scenario);
        out.push({ id: `${inst.id}/s${si}/o${oi}/${kind}`, instanceId: inst.id, userId: inst.userId, ratio: sub.ratio, subgraph: sub.ids, order, scenario, steps });
      }
    }
  }
  return out;
}
