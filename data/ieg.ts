// The Intent Elicitation Graph (IEG) of one instance (method §2, §7; paper "Intent
// Elicitation Graph"): a DAG over target ids, edge [parent, child] meaning "resolving the
// parent can change whether/how the child should be elicited". The query is the implicit
// root, so a target without parents hangs directly under it.
//
// Pure functions over `{targets, edges}`. Edges naming unknown targets are ignored here
// (data/validate.ts reports them); every result lists ids in the instance's target order
// unless it is an order by construction, so outputs are deterministic.
import type { Instance } from './schema.ts';
import type { Rng } from '../util/rng.ts';
import { InputError } from '../util/errors.ts';

/** The part of an instance the IEG functions read. */
export type IegGraph = {
  targets: readonly { id: string; essential?: boolean; lateActivatable?: boolean }[];
  edges: readonly (readonly [string, string])[];
};

// Compile-time check that a full Instance is accepted.
const _instanceIsGraph = (i: Instance): IegGraph => i;
void _instanceIsGraph;

const knownIds = (g: IegGraph) => new Set(g.targets.map((t) => t.id));

/** Direct parents of `id` (deduplicated, target order). */
export function parentsOf(g: IegGraph, id: string): string[] {
  const ps = new Set(g.edges.filter(([, c]) => c === id).map(([p]) => p));
  return g.targets.map((t) => t.id).filter((t) => ps.has(t));
}

/** Direct children of `id` (deduplicated, target order). */
export function childrenOf(g: IegGraph, id: string): string[] {
  const cs = new Set(g.edges.filter(([p]) => p === id).map(([, c]) => c));
  return g.targets.map((t) => t.id).filter((t) => cs.has(t));
}

/** All proper ancestors of `id` (transitive parents), in target order. Safe on cycles. */
export function ancestors(g: IegGraph, id: string): Set<string> {
  const parents = parentMap(g);
  const seen = new Set<string>();
  const stack = [...(parents.get(id) ?? [])];
  while (stack.length) {
    const p = stack.pop() as string;
    if (seen.has(p)) continue;
    seen.add(p);
    stack.push(...(parents.get(p) ?? []));
  }
  seen.delete(id); // only possible on a cycle through id
  return new Set(g.targets.map((t) => t.id).filter((t) => seen.has(t)));
}

/** method §7: the backbone subgraph = all essential targets and their ancestors (target order). */
export function backbone(g: IegGraph): Set<string> {
  const keep = new Set<string>();
  for (const t of g.targets) {
    if (!t.essential) continue;
    keep.add(t.id);
    for (const a of ancestors(g, t.id)) keep.add(a);
  }
  return new Set(g.targets.map((t) => t.id).filter((t) => keep.has(t)));
}

/**
 * Undirected hop distance from the nearest id in `sources` to every reachable target
 * (sources are 0). Used to put "optional targets closer to the essential backbone" first
 * (method §7). Unreachable targets are absent from the map.
 */
export function hopsFrom(g: IegGraph, sources: Iterable<string>): Map<string, number> {
  const ids = knownIds(g);
  const nbrs = new Map<string, string[]>();
  for (const [p, c] of g.edges) {
    if (!ids.has(p) || !ids.has(c)) continue;
    nbrs.set(p, [...(nbrs.get(p) ?? []), c]);
    nbrs.set(c, [...(nbrs.get(c) ?? []), p]);
  }
  const dist = new Map<string, number>();
  let frontier = [...sources].filter((s) => ids.has(s));
  for (const s of frontier) dist.set(s, 0);
  for (let d = 1; frontier.length; d++) {
    const next: string[] = [];
    for (const u of frontier) {
      for (const v of nbrs.get(u) ?? []) {
        if (dist.has(v)) continue;
        dist.set(v, d);
        next.push(v);
      }
    }
    frontier = next;
  }
  return dist;
}

/**
 * Targets that can be elicited now: not yet covered, and every parent covered (targets
 * without parents hang under the query root and are always eligible). Target order.
 */
export function eligible(g: IegGraph, covered: ReadonlySet<string>): string[] {
  const parents = parentMap(g);
  return g.targets.map((t) => t.id).filter((id) => !covered.has(id) && (parents.get(id) ?? []).every((p) => covered.has(p)));
}

/**
 * Late activation (method §7; paper "Intent Elicitation Graph" and "Scenario-Controlled
 * Trajectories"): a target flagged `lateActivatable` is initially inactive and becomes
 * active once at least ONE of its parents' slots is covered ("becomes eligible only after
 * one of its parents has been covered"). Every other target is active from the start.
 * A lateActivatable target without parents never activates; validate.ts rejects it.
 */
export function isActive(g: IegGraph, targetId: string, covered: ReadonlySet<string>): boolean {
  const t = g.targets.find((x) => x.id === targetId);
  if (!t?.lateActivatable) return true;
  return parentsOf(g, targetId).some((p) => covered.has(p));
}

/**
 * A directed cycle over the edges (any endpoint, known or not), as the ids along it
 * without repeating the first: ['a', 'b', 'c'] means a -> b -> c -> a; a self-loop is
 * ['a']. null when the graph is a DAG. Deterministic (edge order).
 */
export function findCycle(g: Pick<IegGraph, 'edges'>): string[] | null {
  const out = new Map<string, string[]>();
  for (const [p, c] of g.edges) out.set(p, [...(out.get(p) ?? []), c]);
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (u: string): string[] | null => {
    state.set(u, 'open');
    path.push(u);
    for (const v of out.get(u) ?? []) {
      const s = state.get(v);
      if (s === 'open') return path.slice(path.indexOf(v));
      if (s === undefined) {
        const c = visit(v);
        if (c) return c;
      }
    }
    path.pop();
    state.set(u, 'done');
    return null;
  };
  for (const [p] of g.edges) {
    if (state.has(p)) continue;
    const c = visit(p);
    if (c) return c;
  }
  return null;
}

/** parent lists over known targets only (unknown endpoints dropped). */
export function parentMap(g: IegGraph): Map<string, string[]> {
  const ids = knownIds(g);
  const m = new Map<string, string[]>();
  for (const [p, c] of g.edges) {
    if (!ids.has(p) || !ids.has(c) || p === c) continue;
    const ps = m.get(c) ?? [];
    if (!ps.includes(p)) ps.push(p);
    m.set(c, ps);
  }
  return m;
}

// ---------------------------------------------------------------------------------------
// Topological orders (method §7: "order targets so no child precedes a parent; several valid
// orders diversify"). Over a subset, a precedes b whenever a is an ANCESTOR of b in the
// full graph, so constraints through left-out intermediate targets are kept.

export type OrderOptions = { all: true; max?: number } | { k: number; rng: Rng };

/** Above this many nodes the exact counting DP (2^n states) is skipped. */
const EXACT_LIMIT = 16;

/**
 * Topological orders of `subset` (default: all targets; unknown ids dropped; target order).
 * `{all: true}`: every order, in lexicographic target order; throws if there are more than
 * `max` (default 40320 = 8!). `{k, rng}`: min(k, #orders) distinct orders drawn uniformly
 * at random (exact counting for up to 16 nodes, so equal seeds give equal results and
 * every order is equally likely); above 16 nodes draws by random eligible choice and may
 * return fewer than k if distinct orders are rare. Throws InputError on a cycle.
 */
export function topologicalOrders(g: IegGraph, subset?: Iterable<string>, opts: OrderOptions = { all: true }): string[][] {
  const want = subset ? new Set(subset) : null;
  const nodes = g.targets.map((t) => t.id).filter((id) => !want || want.has(id));
  const unique = [...new Set(nodes)];
  const index = new Map(unique.map((id, i) => [id, i]));
  const preds = unique.map((id) => [...ancestors(g, id)].filter((a) => index.has(a)).map((a) => index.get(a) as number));
  const cycle = findCycle(g);
  if (cycle && cycle.some((c) => index.has(c))) {
    throw new InputError(`IEG has a cycle ${[...cycle, cycle[0]].join(' -> ')}; no topological order exists (run gsteer data validate)`);
  }
  const dag: Dag = { n: unique.length, preds };
  const toIds = (o: number[]) => o.map((i) => unique[i] as string);
  if ('all' in opts) return enumerate(dag, opts.max ?? 40320).map(toIds);
  if (!Number.isInteger(opts.k) || opts.k < 0) throw new InputError(`topologicalOrders: k must be an integer >= 0, got ${opts.k}`);
  return sample(dag, opts.k, opts.rng).map(toIds);
}

type Dag = { n: number; preds: number[][] }; // preds[i]: indices that must precede i

const ready = (d: Dag, placed: boolean[], i: number) => !placed[i] && (d.preds[i] ?? []).every((p) => placed[p]);

function enumerate(d: Dag, max: number): number[][] {
  const out: number[][] = [];
  const placed = new Array<boolean>(d.n).fill(false);
  const order: number[] = [];
  const rec = () => {
    if (order.length === d.n) {
      if (out.length >= max) throw new InputError(`more than ${max} topological orders; sample them with {k, rng} instead of {all: true}`);
      out.push([...order]);
      return;
    }
    for (let i = 0; i < d.n; i++) {
      if (!ready(d, placed, i)) continue;
      placed[i] = true;
      order.push(i);
      rec();
      order.pop();
      placed[i] = false;
    }
  };
  rec();
  return out;
}

function sample(d: Dag, k: number, rng: Rng): number[][] {
  if (k === 0) return [];
  const exact = d.n <= EXACT_LIMIT ? completions(d) : null;
  const total = exact ? exact(0) : Infinity;
  if (total <= k) return rng.shuffle(enumerate(d, total));
  const seen = new Set<string>();
  const out: number[][] = [];
  const maxTries = exact ? Infinity : 50 * k + 100; // exact: total > k, so rejection terminates
  for (let tries = 0; out.length < k && tries < maxTries; tries++) {
    const o = drawOne(d, rng, exact);
    const key = o.join(',');
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(o);
  }
  return out;
}

/** One order: the next node is chosen with probability proportional to its completions. */
function drawOne(d: Dag, rng: Rng, exact: ((mask: number) => number) | null): number[] {
  const placed = new Array<boolean>(d.n).fill(false);
  const order: number[] = [];
  let mask = 0;
  while (order.length < d.n) {
    const cands = [...Array(d.n).keys()].filter((i) => ready(d, placed, i));
    // uniform over orders: weight each candidate by its completions; without counts, uniform over candidates
    const ws = cands.map((i) => (exact ? exact(mask | (1 << i)) : 1));
    let r = rng.next() * ws.reduce((a, b) => a + b, 0);
    let pick = cands[cands.length - 1] as number; // rounding guard
    for (const [j, w] of ws.entries()) {
      if ((r -= w) < 0) {
        pick = cands[j] as number;
        break;
      }
    }
    placed[pick] = true;
    order.push(pick);
    mask |= 1 << pick;
  }
  return order;
}

/** f(mask) = number of ways to finish an order whose placed nodes are `mask` (memoized). */
function completions(d: Dag): (mask: number) => number {
  const full = (1 << d.n) - 1;
  const predMask = d.preds.map((ps) => ps.reduce((m, p) => m | (1 << p), 0));
  const memo = new Map<number, number>([[full, 1]]);
  const f = (mask: number): number => {
    const hit = memo.get(mask);
    if (hit !== undefined) return hit;
    let sum = 0;
    for (let i = 0; i < d.n; i++) {
      const bit = 1 << i;
      if (!(mask & bit) && (predMask[i]! & mask) === predMask[i]) sum += f(mask | bit);
    }
    memo.set(mask, sum);
    return sum;
  };
  return f;
}
