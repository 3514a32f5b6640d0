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
import { SCENARIO_KINDS, hasRandomHits, sampleHits, sampleStop, wantsEarlyStop, type Scenario, type ScenarioKind } from './scenario.ts';
import { subgraphs } from './subgraphs.ts';
import { templateTeacher, type Teacher } from './teacher.ts';
import { walk, type SftStep } from './trajectory.ts';

export interface SftTrajectory {
  id: string; // `${instanceId}/s${subgraph}/o${order}/${kind}` [+ `/m${sample}`] [+ `/p${stop}`] [+ `/late-off`]
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
  /** Memory-hit samples per (subgraph, order) for the kinds with random hits (memory_mixed, early_stop); default 1. */
  memorySamples?: number;
  /** Stopping points per early_stop sample; default 1. */
  stopPoints?: number;
  /** `graph`: late-activatable targets wait for a parent; `vary`: also each scenario with them active from the start (when the subgraph has any); default graph. */
  lateActivation?: 'graph' | 'vary';
}

/** The instance with late activation switched off (every target active from the start). */
const lateOff = (g: Instance): Instance => ({ ...g, targets: g.targets.map((t) => ({ ...t, lateActivatable: false })) });

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
    const clarifier = o.variant === 'clarifier';
    const orderRng = Rng.derive(o.seed, 'sft', inst.id, 'orders', si);
    const orders = random ? randomOrders(sub.ids, o.ordersPerSubgraph, orderRng) : prioritizedOrders(inst, sub.ids, o.ordersPerSubgraph, rank, orderRng);
    const hasLate = sub.ids.some((id) => inst.targets.find((t) => t.id === id)?.lateActivatable);
    const variants: [Instance, string][] = [[inst, '']];
    if (o.lateActivation === 'vary' && hasLate) variants.push([lateOff(inst), '/late-off']);
    for (const [oi, order] of orders.entries()) {
      for (const kind of o.kinds ?? (clarifier ? CLARIFIER_KINDS : SCENARIO_KINDS)) {
        // Sample 0 draws hits then the stop from the same stream as ever (ids unchanged);
        // further samples and stops come from streams derived from it. Repeats are skipped.
        const samples = hasRandomHits(kind) && !clarifier ? Math.max(1, o.memorySamples ?? 1) : 1;
        const seenHits = new Set<string>();
        for (let m = 0; m < samples; m++) {
          const rng =
            m === 0 ? Rng.derive(o.seed, 'sft', inst.id, 'scenario', si, oi, kind) : Rng.derive(o.seed, 'sft', inst.id, 'scenario', si, oi, kind, 'm', m);
          const memoryHits = clarifier ? [] : sampleHits(kind, sub.ids, rng);
          const hitKey = memoryHits.join('\u0000');
          if (seenHits.has(hitKey)) continue;
          seenHits.add(hitKey);
          for (const [g, lateTag] of variants) {
            const ctx = { instance: g, memory: o.memory, maxTurns: o.maxTurns, topK: o.topK, respectIeg: !random, clarifier };
            const base = `${inst.id}/s${si}/o${oi}/${kind}${m ? `/m${m}` : ''}`;
            const stops: (number | null)[] = [null];
            if (wantsEarlyStop(kind)) {
              // Stopping points are sampled from the complete walk of the same scenario.
              const full = await walk({ ...ctx, teacher: templateTeacher }, order, { kind, memoryHits, stopAfter: null });
              stops.length = 0;
              const n = Math.max(1, o.stopPoints ?? 1);
              for (let p = 0; p < n && full.essentialAt !== null; p++) {
                const stopRng = p === 0 && lateTag === '' ? rng : Rng.derive(o.seed, 'sft', inst.id, 'stop', si, oi, kind, m, p, lateTag);
                const stop = sampleStop(full.essentialAt, full.acquisitions, stopRng);
                if (stop !== null && !stops.includes(stop)) stops.push(stop);
              }
              // nothing to cut: the complete trajectory is already built
            }
            for (const [p, stopAfter] of stops.entries()) {
              const scenario: Scenario = { kind, memoryHits, stopAfter };
              const { steps } = await walk({ ...ctx, teacher }, order, scenario);
              const id = `${base}${p ? `/p${p}` : ''}${lateTag}`;
              out.push({ id, instanceId: inst.id, userId: inst.userId, ratio: sub.ratio, subgraph: sub.ids, order, scenario, steps });
            }
          }
        }
      }
    }
  }
  return out;
}
