// method §7: one scenario-controlled trajectory, walked by rule over the IEG.
//
// Each turn (the policy's output = updated state, Plan, Action, Execute):
//  1. Slots: every active target of the subgraph has one, named by its canonical slot
//     (`slot.name` / `slot.purpose` from gsteer data build, else target id / description). A lateActivatable target is inactive, and has no slot, until one of its
//     parents is covered (data/ieg.ts isActive); its slot is then appended. STATE lists the
//     initially active slots in the instance's target order, then the late ones as they
//     activate: the state is a record of what is known, the same whatever the schedule, and
//     the schedule shows in PLAN and ACTION.
//  2. Stop when every active slot is covered, or after `stopAfter` Retrieve/Ask turns, or
//     on the last allowed turn (turn = maxTurns); q* comes from the teacher.
//  3. Otherwise the "ready" targets are the active, uncovered ones whose parents are all
//     covered, in schedule order. Ready targets whose memory was not yet checked are
//     retrieved first (up to topK per Retrieve; on turn 1 these are the initially active
//     ones); else the earliest ready target is asked, one per Ask, with its seed question.
//  4. The observation updates the matching slots: a memory hit covers its slot with the
//     memory value (source memory), an answer covers the asked slot with the seed answer
//     (source dialogue). An uncovered slot's source says where its evidence will be sought
//     next: memory until memory was checked for it, dialogue afterwards.
import type { Instance, Target } from '../schema.ts';
import type { EvidenceSlot, Observation, PolicyTurn } from '../../core/types.ts';
import { isActive, parentMap } from '../ieg.ts';
import { assert } from '../../util/errors.ts';
import { sftProfile, slotOf, type OfflineMemory } from './memory.ts';
import { planText, type Change, type StopReason } from './plan.ts';
import type { Scenario } from './scenario.ts';
import type { Teacher } from './teacher.ts';

export interface SftStep {
  turn: PolicyTurn;
  /** What the environment returned after this turn (`none` after STOP). */
  observation: Observation;
  /** Target ids this turn acts on: the retrieved ones, the asked one, none for STOP. */
  acts: string[];
  stopReason?: StopReason;
}

export interface WalkContext {
  instance: Instance;
  memory: OfflineMemory;
  teacher: Teacher;
  maxTurns: number;
  topK: number;
  /** false: the random-order ablation (sft.order = random): targets are acquired in schedule order, parents or not. */
  respectIeg?: boolean;
  /**
   * The IntentRL-style Ask/Stop clarifier (variant = clarifier; method §8.5): no Retrieve, empty
   * STATE; it sees the frozen profile, and q* is written from the dialogue (the answers it got).
   */
  clarifier?: boolean;
}

export interface Walk {
  steps: SftStep[];
  /** Retrieve/Ask turns after which every essential subgraph target was covered (null: never). */
  essentialAt: number | null;
  acquisitions: number;
}

interface SlotInfo {
  covered: boolean;
  checked: boolean; // memory was searched for it
  value: string;
  source: 'memory' | 'dialogue';
}

/** The mutable state of one walk: slot bookkeeping over the schedule `order`. */
class WalkState {
  readonly info: Map<string, SlotInfo>;
  /** Active targets, in schedule order within each activation (what `ready` walks). */
  readonly slotIds: string[];
  /** The same targets in STATE-line order: instance target order within each activation. */
  private readonly shown: string[];
  private readonly byId: Map<string, Target>;
  private readonly parents: Map<string, string[]>;

  constructor(
    readonly g: Instance,
    readonly order: readonly string[],
  ) {
    this.byId = new Map(g.targets.map((t) => [t.id, t]));
    this.parents = parentMap(g);
    this.info = new Map(order.map((id) => [id, { covered: false, checked: false, value: '', source: 'memory' }]));
    this.slotIds = order.filter((id) => isActive(g, id, new Set()));
    this.shown = this.inTargetOrder(this.slotIds);
  }

  private inTargetOrder(ids: readonly string[]): string[] {
    return this.g.targets.map((t) => t.id).filter((id) => ids.includes(id));
  }

  target = (id: string) => this.byId.get(id) as Target;
  /** The slot name a target's slot carries (canonical when built, else the id). */
  name = (id: string) => slotOf(this.target(id)).name;
  slot = (id: string) => this.info.get(id) as SlotInfo;
  covered = () => new Set(this.order.filter((id) => this.slot(id).covered));

  /** Append the slots of late targets that a covered parent just activated; returns them. */
  activate(): string[] {
    const cov = this.covered();
    const newly = this.order.filter((id) => !this.slotIds.includes(id) && isActive(this.g, id, cov));
    this.slotIds.push(...newly);
    this.shown.push(...this.inTargetOrder(newly));
    return newly;
  }

  state(): EvidenceSlot[] {
    return this.shown.map((id) => {
      const s = this.slot(id);
      const { name, purpose } = slotOf(this.target(id));
      return s.covered
        ? { name, purpose, status: 'covered', value: s.value, source: s.source }
        : { name, purpose, status: 'uncovered', value: '', source: s.checked ? 'dialogue' : 'memory' };
    });
  }

  /** Active, uncovered, every parent covered (unless `respectIeg` is false); schedule order. */
  ready(respectIeg = true): string[] {
    const cov = this.covered();
    return this.slotIds.filter((id) => !cov.has(id) && (!respectIeg || (this.parents.get(id) ?? []).every((p) => cov.has(p))));
  }

  cover(id: string, value: string, source: SlotInfo['source']): void {
    Object.assign(this.slot(id), { covered: true, value, source });
  }
}

function stopReason(w: WalkState, scenario: Scenario, acquisitions: number, turn: number, maxTurns: number): StopReason | null {
  if (w.slotIds.every((id) => w.slot(id).covered)) return 'complete';
  if (scenario.stopAfter !== null && acquisitions >= scenario.stopAfter) return 'stop_point';
  return turn >= maxTurns ? 'turn_budget' : null;
}

/** One Retrieve for `ids`: hits are covered from memory, every id is marked checked. */
async function retrieveTurn(ctx: WalkContext, w: WalkState, ids: string[], hits: ReadonlySet<string>, state: EvidenceSlot[], changes: Change[]) {
  const draft = { plan: planText(changes, { kind: 'retrieve', slots: ids }, w.name), execute: ids.map((id) => w.target(id).description).join('; ') };
  const { plan, execute } = await rendered(ctx, w, 'RETRIEVE', ids, state, draft);
  const found = ids.filter((id) => hits.has(id));
  const results = await ctx.memory.retrieve(ctx.instance, execute, found.map(w.target));
  for (const id of ids) w.slot(id).checked = true;
  for (const id of found) w.cover(id, w.target(id).seedAnswer, 'memory');
  const step: SftStep = {
    turn: { state, plan, action: 'RETRIEVE', execute },
    observation: { kind: 'memory', query: execute, results },
    acts: ids,
  };
  return { step, change: { kind: 'memory', covered: found, missed: ids.filter((id) => !found.includes(id)) } satisfies Change };
}

/** The teacher's Plan/Execute for a turn when it renders turns (render.ts), else the template draft. */
async function rendered(
  ctx: WalkContext,
  w: WalkState,
  action: 'RETRIEVE' | 'ASK' | 'STOP',
  ids: readonly string[],
  state: EvidenceSlot[],
  draft: { plan: string; execute: string },
) {
  if (!ctx.teacher.turn) return draft;
  const slots = ids.map((id) => ({ ...slotOf(w.target(id)), seedQuestion: w.target(id).seedQuestion }));
  return ctx.teacher.turn({ action, query: ctx.instance.query, profile: sftProfile(ctx.instance), state, slots, draft });
}

/** One Ask for `id` (the seed question, or the teacher's); the seed answer covers it from dialogue. */
async function askTurn(ctx: WalkContext, w: WalkState, id: string, state: EvidenceSlot[], changes: Change[]) {
  const t = w.target(id);
  const { plan, execute } = await rendered(ctx, w, 'ASK', [id], state, { plan: planText(changes, { kind: 'ask', slot: id }, w.name), execute: t.seedQuestion });
  w.cover(id, t.seedAnswer, 'dialogue');
  const step: SftStep = {
    turn: { state, plan, action: 'ASK', execute },
    observation: { kind: 'answer', question: execute, answer: t.seedAnswer, targetId: id },
    acts: [id],
  };
  return { step, change: { kind: 'answer', covered: id } satisfies Change };
}

export async function walk(ctx: WalkContext, order: readonly string[], scenario: Scenario): Promise<Walk> {
  const w = new WalkState(ctx.instance, order);
  const hits = new Set(scenario.memoryHits);
  const essentials = order.filter((id) => w.target(id).essential);
  const steps: SftStep[] = [];
  let changes: Change[] = [{ kind: 'start', slots: [...w.slotIds] }];
  let essentialAt: number | null = essentials.length === 0 ? 0 : null;
  let acquisitions = 0;
  for (let turn = 1; ; turn++) {
    const newly = w.activate();
    if (newly.length && turn > 1) changes.push({ kind: 'activated', slots: newly });
    const slots = w.state();
    const state = ctx.clarifier ? [] : slots; // the clarifier writes no evidence slots
    const stop = stopReason(w, scenario, acquisitions, turn, ctx.maxTurns);
    if (stop) {
      // The clarifier tracks no slots: its evidence is the dialogue so far (question, answer).
      const dialogue = ctx.clarifier
        ? steps.flatMap((s) => (s.observation.kind === 'answer' ? [{ question: s.observation.question, answer: s.observation.answer }] : []))
        : [];
      const execute = await ctx.teacher.refine({
        query: ctx.instance.query,
        profile: sftProfile(ctx.instance),
        slots: state,
        ...(dialogue.length ? { dialogue } : {}),
      });
      const { plan } = await rendered(ctx, w, 'STOP', [], state, { plan: planText(changes, { kind: 'stop', reason: stop }, w.name), execute });
      const turnOut: PolicyTurn = { state, plan, action: 'STOP', execute };
      steps.push({ turn: turnOut, observation: { kind: 'none' }, acts: [], stopReason: stop });
      return { steps, essentialAt, acquisitions };
    }
    const ready = w.ready(ctx.respectIeg ?? true);
    assert(ready.length > 0, `sft walk ${ctx.instance.id}: active slots uncovered but none ready (a lateActivatable target without parents?)`);
    const toCheck = ctx.clarifier ? [] : ready.filter((id) => !w.slot(id).checked).slice(0, ctx.topK);
    const { step, change } = toCheck.length
      ? await retrieveTurn(ctx, w, toCheck, hits, state, changes)
      : await askTurn(ctx, w, ready[0] as string, state, changes);
    steps.push(step);
    changes = [change];
    acquisitions++;
    if (essentialAt === null && essentials.every((id) => w.slot(id).covered)) essentialAt = acquisitions;
  }
}
