// method §7: target schedules. "Order targets so no child precedes a parent; several valid
// orders diversify; when several are eligible, optional targets closer to the essential
// backbone go first." One order is drawn by repeatedly taking, among the ready targets
// (all parents placed), one of those with the smallest rank (backbone = 0, an optional
// target = its hop distance to the backbone), uniformly at random among equal ranks. We
// draw up to `k` distinct orders this way (data/ieg.ts's topologicalOrders samples
// uniformly over ALL orders and knows no priority, so it is not used here).
import { parentMap, type IegGraph } from '../ieg.ts';
import type { Rng } from '../../util/rng.ts';

/** rank(id) for the priority rule: 0 on the backbone, hop distance otherwise (far = large). */
export type Rank = (id: string) => number;

function drawOrder(ids: readonly string[], parents: Map<string, string[]>, rank: Rank, rng: Rng): string[] {
  const inSet = new Set(ids);
  const placed = new Set<string>();
  const order: string[] = [];
  while (order.length < ids.length) {
    const ready = ids.filter((id) => !placed.has(id) && (parents.get(id) ?? []).every((p) => !inSet.has(p) || placed.has(p)));
    if (ready.length === 0) throw new Error('internal: no ready target; the subgraph has a cycle (validate the IEG first)');
    const best = Math.min(...ready.map(rank));
    const top = ready.filter((id) => rank(id) === best);
    const pick = top[rng.int(top.length)] as string;
    placed.add(pick);
    order.push(pick);
  }
  return order;
}

/**
 * Up to `k` distinct prioritized orders of `ids` (fewer when the priority rule leaves
 * fewer choices). Tries 20k draws at most, so a rule with one outcome returns quickly.
 */
export function prioritizedOrders(g: IegGraph, ids: readonly string[], k: number, rank: Rank, rng: Rng): string[][] {
  const parents = parentMap(g);
  const seen = new Set<string>();
  const out: string[][] = [];
  for (let tries = 0; out.length < k && tries < 20 * k; tries++) {
    const o = drawOrder(ids, parents, rank, rng);
    const key = o.join('\u0000');
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(o);
  }
  return out;
}

/**
 * The random-order ablation (`sft.order: random`; paper Table 3, "SFT with randomized target
 * order"): up to `k` distinct uniformly random permutations of `ids`, ignoring the IEG and
 * the priority rule; the target set, scenarios and stopping points stay as in the default.
 */
export function randomOrders(ids: readonly string[], k: number, rng: Rng): string[][] {
  const seen = new Set<string>();
  const out: string[][] = [];
  for (let tries = 0; out.length < k && tries < 20 * k; tries++) {
    const o = rng.shuffle(ids);
    const key = o.join('\u0000');
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(o);
  }
  return out;
}
