// method §7, paper "Scenario-Controlled Trajectories": the target subgraphs a trajectory is
// built over. The backbone = every essential target and its ancestors; extra variants add a
// deterministic subset of the optional targets at each ratio in cfg.sft.optionalRatios
// ({0, 0.5, 1.0} in the paper). Optional targets closer to the backbone (undirected hops in
// the IEG) come first; ties are broken by a seeded shuffle. Every subgraph is closed under
// ancestors, so its topological orders never need a target that is left out.
import { ancestors, backbone, hopsFrom, type IegGraph } from '../ieg.ts';
import type { Rng } from '../../util/rng.ts';

export interface Subgraph {
  /** The ratio of optional targets requested (the subgraph may hold a few more: ancestor closure). */
  ratio: number;
  /** Target ids, in the instance's target order. */
  ids: string[];
}

/**
 * Optional targets ranked for inclusion: by hop distance to the backbone (unreachable ones
 * last, then by their own hop distance to the nearest root), ties in seeded random order.
 */
export function rankOptional(g: IegGraph, core: ReadonlySet<string>, rng: Rng): string[] {
  const optional = g.targets.map((t) => t.id).filter((id) => !core.has(id));
  const hops = hopsFrom(g, core);
  const roots = g.targets.map((t) => t.id).filter((id) => ancestors(g, id).size === 0);
  const rootHops = hopsFrom(g, roots);
  const far = g.targets.length + 1;
  const key = (id: string) => hops.get(id) ?? far + (rootHops.get(id) ?? far);
  const tie = new Map(rng.shuffle(optional).map((id, i) => [id, i]));
  return [...optional].sort((a, b) => key(a) - key(b) || (tie.get(a) as number) - (tie.get(b) as number));
}

/**
 * One subgraph per ratio, duplicates (same id set) dropped, in ratio order. At ratio r the
 * first round(r * #optional) ranked optional targets are added together with their
 * ancestors (which are optional too: the backbone already holds the essentials' ancestors).
 */
export function subgraphs(g: IegGraph, ratios: readonly number[], rng: Rng): Subgraph[] {
  const core = backbone(g);
  const ranked = rankOptional(g, core, rng);
  const out: Subgraph[] = [];
  const seen = new Set<string>();
  for (const ratio of ratios) {
    const want = Math.round(ratio * ranked.length);
    const keep = new Set(core);
    for (const id of ranked.slice(0, want)) {
      keep.add(id);
      for (const a of ancestors(g, id)) keep.add(a);
    }
    const ids = g.targets.map((t) => t.id).filter((id) => keep.has(id));
    const key = ids.join('\u0000');
    if (ids.length === 0 || seen.has(key)) continue;
    seen.add(key);
    out.push({ ratio, ids });
  }
  return out;
}
