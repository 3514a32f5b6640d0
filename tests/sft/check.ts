// An independent checker for scaffolded trajectories (method §7 rules, re-derived here from
// the instance, not from the builder's code) and a random-IEG generator for property tests.
import fc from 'fast-check';
import { InstanceSchema, type Instance } from '../../data/schema.ts';
import { parseTurn, renderTurn } from '../../structured/turn/grammar.ts';
import type { SftTrajectory } from '../../data/sft/build.ts';

/** Every rule violation found in `t` (empty = valid). */
export interface CheckOptions {
  maxTurns: number;
  topK: number;
  /** Target ids that the same user's other instances also use (their memories may share a name). */
  sharedIds?: ReadonlySet<string>;
}

export function violations(inst: Instance, t: SftTrajectory, { maxTurns, topK, sharedIds = new Set() }: CheckOptions): string[] {
  const bad: string[] = [];
  const byId = new Map(inst.targets.map((x) => [x.id, x]));
  const parents = (id: string) => inst.edges.filter(([, c]) => c === id).map(([p]) => p);
  const sub = new Set(t.subgraph);
  const hits = new Set(t.scenario.memoryHits);
  // Subgraph: essentials in, closed under parents; the order is a permutation with parents first.
  for (const x of inst.targets) if (x.essential && !sub.has(x.id)) bad.push(`essential ${x.id} missing from subgraph`);
  for (const id of sub) for (const p of parents(id)) if (!sub.has(p)) bad.push(`${id} in subgraph without its parent ${p}`);
  if ([...t.order].sort().join() !== [...sub].sort().join()) bad.push('order is not a permutation of the subgraph');
  t.order.forEach((id, i) => parents(id).forEach((p) => t.order.indexOf(p) > i && bad.push(`order puts ${id} before its parent ${p}`)));

  const retrieved = new Set<string>();
  const asked = new Set<string>();
  t.steps.forEach((s, i) => {
    const where = `${t.id} step ${i}`;
    const text = renderTurn(s.turn);
    const parsed = parseTurn(text);
    if (!parsed.ok) bad.push(`${where}: target does not parse (${parsed.reason}: ${parsed.detail})`);
    else if (JSON.stringify(parsed.turn) !== JSON.stringify(s.turn)) bad.push(`${where}: parse(render(turn)) differs from the turn`);
    const covered = new Set(s.turn.state.filter((x) => x.status === 'covered').map((x) => x.name));
    // Active slots: non-late subgraph targets, and late ones once a parent is covered.
    const expectSlots = t.subgraph.filter((id) => !byId.get(id)!.lateActivatable || parents(id).some((p) => covered.has(p)));
    const slots = s.turn.state.map((x) => x.name);
    if ([...slots].sort().join() !== [...expectSlots].sort().join()) bad.push(`${where}: slots ${slots} but active targets ${expectSlots}`);
    // STATE order: the previous turn's slots first, unchanged in order; the ones that became
    // active since then after them; within each group, the instance's target order.
    const before = i === 0 ? [] : t.steps[i - 1]!.turn.state.map((x) => x.name);
    const rank = (id: string) => inst.targets.findIndex((x) => x.id === id);
    const fresh = slots.filter((id) => !before.includes(id)).sort((a, b) => rank(a) - rank(b));
    if (slots.join() !== [...before, ...fresh].join()) bad.push(`${where}: STATE order ${slots} is not ${[...before, ...fresh]}`);
    for (const id of s.acts) {
      for (const p of parents(id)) if (!covered.has(p)) bad.push(`${where}: acts on ${id} before its parent ${p} is covered`);
      if (covered.has(id)) bad.push(`${where}: acts on already covered ${id}`);
    }
    // Stop rule.
    const stopNow = slots.every((n) => covered.has(n)) || (t.scenario.stopAfter !== null && i >= t.scenario.stopAfter) || i + 1 >= maxTurns;
    if ((s.turn.action === 'STOP') !== stopNow) bad.push(`${where}: action ${s.turn.action} but the stop rule says ${stopNow ? 'STOP' : 'continue'}`);
    if (s.turn.action === 'STOP' && i !== t.steps.length - 1) bad.push(`${where}: STOP is not the last step`);
    if (s.turn.action === 'ASK') {
      if (s.acts.length !== 1) bad.push(`${where}: an Ask acts on ${s.acts.length} targets`);
      const id = s.acts[0]!;
      if (!retrieved.has(id)) bad.push(`${where}: asks ${id} before memory was checked for it`);
      if (hits.has(id)) bad.push(`${where}: asks ${id}, a memory hit`);
      if (s.turn.execute !== byId.get(id)!.seedQuestion.replace(/\s+/g, ' ').trim()) bad.push(`${where}: Ask execute is not the seed question of ${id}`);
      if (s.observation.kind !== 'answer' || s.observation.targetId !== id) bad.push(`${where}: Ask observation is not the answer of ${id}`);
      asked.add(id);
    }
    if (s.turn.action === 'RETRIEVE') {
      if (s.acts.length < 1 || s.acts.length > topK) bad.push(`${where}: Retrieve for ${s.acts.length} targets`);
      if (s.observation.kind !== 'memory') bad.push(`${where}: Retrieve without a memory observation`);
      else {
        const names = s.observation.results.map((r) => r.name);
        if (names.length > topK) bad.push(`${where}: ${names.length} memories returned`);
        for (const id of s.acts) if (hits.has(id) && !names.includes(id)) bad.push(`${where}: memory hit ${id} not returned`);
        for (const x of inst.targets)
          if (names.includes(x.id) && !(hits.has(x.id) && s.acts.includes(x.id)) && !sharedIds.has(x.id))
            bad.push(`${where}: memory of non-hit ${x.id} returned`);
      }
      s.acts.forEach((id) => retrieved.add(id));
    }
    if (i > 0) {
      // The previous observation's slots are covered now, with the right source.
      const prev = t.steps[i - 1]!;
      for (const id of prev.acts) {
        const slot = s.turn.state.find((x) => x.name === id)!;
        const expect = prev.turn.action === 'ASK' ? 'dialogue' : hits.has(id) ? 'memory' : null;
        if (expect && (slot.status !== 'covered' || slot.source !== expect)) bad.push(`${where}: ${id} should be covered from ${expect}`);
        if (!expect && slot.status !== 'uncovered') bad.push(`${where}: ${id} covered without evidence`);
      }
    }
  });
  if (t.steps.at(-1)?.turn.action !== 'STOP') bad.push(`${t.id}: does not end with STOP`);
  return bad;
}

/** A random instance: targets t0..t{n-1}, edges only i -> j with i < j (a DAG), late flags only on targets with parents. */
export const arbInstance = (id: string, userId: string) =>
  fc
    .record({
      n: fc.integer({ min: 1, max: 7 }),
      edgeBits: fc.array(fc.boolean(), { minLength: 21, maxLength: 21 }),
      essential: fc.array(fc.boolean(), { minLength: 7, maxLength: 7 }),
      late: fc.array(fc.boolean(), { minLength: 7, maxLength: 7 }),
    })
    .map(({ n, edgeBits, essential, late }): Instance => {
      const edges: [string, string][] = [];
      let k = 0;
      for (let j = 0; j < 7; j++) for (let i = 0; i < j; i++) if (edgeBits[k++] && j < n) edges.push([`${id}t${i}`, `${id}t${j}`]);
      const hasParent = (j: number) => edges.some(([, c]) => c === `${id}t${j}`);
      return InstanceSchema.parse({
        id,
        userId,
        taskId: `task-${id}`,
        split: 'train',
        query: `research question ${id}`,
        profile: '',
        targets: [...Array(n).keys()].map((j) => ({
          id: `${id}t${j}`,
          description: `factor ${j} of ${id}`,
          seedQuestion: `What about factor ${j}?`,
          seedAnswer: `answer ${j} for ${id}`,
          weight: 1,
          essential: essential[j],
          lateActivatable: Boolean(late[j] && hasParent(j)),
        })),
        edges,
      });
    });
