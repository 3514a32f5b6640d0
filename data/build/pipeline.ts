// `gsteer data build`: raw pairs -> instances + offline SFT user states (method §2, §7;
// paper "Elicitation Target Construction", "Intent Elicitation Graph", "User State
// Construction: Offline SFT state"). Per pair: candidates -> weights from the rubric ->
// validation (+ essential labels) -> seed Q/A -> IEG -> canonical slots. Then per training
// pair the offline profile summary over the user's other training pairs, and per user the
// offline SFT state: one slot memory {name, purpose, value = seed answer} per target of the
// user's training pairs. A pair whose step failed (after the endpoint's retries) is left
// out and reported with the step, the error and the last reply; the rest are built.
import type { Instance, UserState } from '../schema.ts';
import { personaLines } from '../persona.ts';
import type { RawDataset } from '../raw/schema.ts';
import { PROMPTS } from './prompts.ts';
import { rubricWeights, type ProfileSource } from './rules.ts';
import type { Placement } from './split.ts';
import { StepError, type BuildSteps } from './steps.ts';
import { taskFacts } from './task-facts.ts';
import type { BuiltTarget, Candidate, DropReason, RawInstance, Slot } from './types.ts';

export interface CandidateFate {
  id: string;
  description: string;
  rubricItems: number[];
  weight: number;
  kept: boolean;
  reason: DropReason | 'no_seed_answer' | null;
  essential: boolean;
}

export interface Failure {
  instanceId: string;
  step: string;
  error: string;
  /** The last raw reply the model sent (thinking included), when there was one. */
  reply: string | null;
}

export interface BuildResult {
  instances: Instance[];
  userStates: UserState[];
  candidates: Record<string, CandidateFate[]>;
  failures: Failure[];
}

interface Built {
  raw: RawInstance;
  targets: (BuiltTarget & { slot: Slot; late: boolean })[];
  edges: [string, string][];
}

async function buildOne(raw: RawInstance, steps: BuildSteps, tick: (step: string) => void): Promise<{ built: Built; fates: CandidateFate[] }> {
  const cands: Candidate[] = await steps.candidates(raw);
  tick('candidates');
  const weights = rubricWeights(cands, raw.rubric);
  const decisions = await steps.validate(raw, cands, weights);
  tick('validate');
  const fates: CandidateFate[] = cands.map((c, i) => {
    const d = decisions[i]!;
    return {
      id: c.id,
      description: c.description,
      rubricItems: c.rubricItems,
      weight: weights.get(c.id) ?? 0,
      kept: d.keep,
      reason: d.reason,
      essential: d.keep && d.essential,
    };
  });
  let targets: BuiltTarget[] = cands
    .filter((_, i) => decisions[i]!.keep)
    .map((c) => ({
      id: c.id,
      description: c.description,
      criterion: c.criterion,
      weight: weights.get(c.id) ?? 0,
      essential: decisions.find((d) => d.id === c.id)!.essential,
      seedQuestion: '',
      seedAnswer: '',
    }));
  const seeds = new Map((await steps.seeds(raw, targets)).map((s) => [s.id, s]));
  tick('seeds');
  for (const t of targets) Object.assign(t, { seedQuestion: seeds.get(t.id)!.seedQuestion, seedAnswer: seeds.get(t.id)!.seedAnswer.trim() });
  // An optional target the user's facts give no answer for is dropped (it would make the simulator invent one).
  for (const f of fates)
    if (f.kept && !targets.find((t) => t.id === f.id)!.seedAnswer) Object.assign(f, { kept: false, reason: 'no_seed_answer', essential: false });
  targets = targets.filter((t) => t.seedAnswer);
  // an instance without targets is not an instance (data validate refuses it): the pair is not built, and says why
  if (targets.length === 0)
    throw new StepError(
      'validate',
      new Error(
        `every candidate target was dropped (${fates.map((f) => `${f.id} "${f.description.slice(0, 40)}": ${f.reason}`).join('; ')}); the pair is left out: give its task rubric items that its user's persona or context bears on`,
      ),
    );
  const ieg = await steps.ieg(raw, targets);
  tick('ieg');
  const slots = new Map((await steps.slots(raw, targets)).map((s) => [s.id, s]));
  tick('slots');
  const late = new Set(ieg.lateActivatable);
  return {
    built: { raw, targets: targets.map((t) => ({ ...t, slot: slots.get(t.id)!, late: late.has(t.id) })), edges: ieg.edges.map((e) => [e.parent, e.child]) },
    fates,
  };
}

function toInstance(b: Built, split: 'train' | 'test', offlineProfile: string | undefined): Instance {
  const { raw } = b;
  return {
    id: raw.id,
    userId: raw.user.id,
    taskId: raw.task.id,
    split,
    query: raw.query,
    profile: raw.user.profile,
    // The simulator sees the task-relevant persona facts and context snippets, one per line (task-facts.ts).
    persona: taskFacts([...personaLines(raw.user.persona), ...raw.user.context], raw.query, b.targets),
    targets: b.targets.map((t) => ({
      id: t.id,
      description: t.description,
      seedQuestion: t.seedQuestion,
      seedAnswer: t.seedAnswer,
      weight: t.weight,
      essential: t.essential,
      criterion: t.criterion,
      lateActivatable: t.late,
      slot: { name: t.slot.name, purpose: t.slot.purpose },
    })),
    edges: b.edges,
    ...(offlineProfile !== undefined ? { offlineProfile } : {}),
  };
}

export interface PipelineHooks {
  /** Called after each step of each pair (for the progress bar). */
  tick?: (instanceId: string, step: string) => void;
}

export async function buildDataset(ds: RawDataset, placements: readonly Placement[], steps: BuildSteps, hooks: PipelineHooks = {}): Promise<BuildResult> {
  const splitOf = new Map(placements.map((p) => [p.id, p.split]));
  const failures: Failure[] = [];
  const fail = (instanceId: string, e: unknown) => {
    const err = e instanceof StepError ? e.cause : (e as Error);
    failures.push({ instanceId, step: e instanceof StepError ? e.step : 'build', error: err.message, reply: (err as { reply?: string | null }).reply ?? null });
  };
  const fatesOf = new Map<string, CandidateFate[]>();
  // Every pair at once: the endpoint's concurrency cap bounds the calls in flight.
  const built = await Promise.all(
    ds.pairs.map(async (raw) => {
      try {
        const r = await buildOne(raw, steps, (step) => hooks.tick?.(raw.id, step));
        fatesOf.set(raw.id, r.fates);
        return r.built;
      } catch (e) {
        fail(raw.id, e);
        return null;
      }
    }),
  );
  const ok = built.filter((b): b is Built => b !== null);
  const train = ok.filter((b) => splitOf.get(b.raw.id) === 'train');
  const sources = (b: Built): ProfileSource[] => b.targets.map((t) => ({ purpose: t.slot.purpose, value: t.seedAnswer, weight: t.weight }));
  const profiles = new Map<string, string>();
  await Promise.all(
    train.map(async (b) => {
      const others = train.filter((o) => o.raw.user.id === b.raw.user.id && o.raw.id !== b.raw.id).flatMap(sources);
      try {
        profiles.set(b.raw.id, await steps.profile(b.raw, b.targets, others));
        hooks.tick?.(b.raw.id, 'profile');
      } catch (e) {
        fail(b.raw.id, e);
      }
    }),
  );
  const failed = new Set(failures.map((f) => f.instanceId));
  const done = ok.filter((b) => !failed.has(b.raw.id));
  const instances = done.map((b) => toInstance(b, splitOf.get(b.raw.id) ?? 'train', profiles.get(b.raw.id)));
  const userStates: UserState[] = [];
  for (const u of ds.users) {
    const mine = done.filter((b) => b.raw.user.id === u.id && splitOf.get(b.raw.id) === 'train');
    if (!mine.length) continue; // users without training pairs start empty (paper: unseen users)
    const memories = mine.flatMap((b) => b.targets.map((t) => ({ name: t.slot.name, purpose: t.slot.purpose, value: t.seedAnswer, sourceInstance: b.raw.id })));
    userStates.push({ userId: u.id, profile: u.profile, memories });
  }
  failures.sort((a, b) => a.instanceId.localeCompare(b.instanceId));
  // In pair order, whatever order the calls finished in (the report is byte-stable).
  const candidates = Object.fromEntries(ds.pairs.filter((p) => fatesOf.has(p.id)).map((p) => [p.id, fatesOf.get(p.id) as CandidateFate[]]));
  return { instances, userStates, candidates, failures };
}

/**
 * LLM calls a build sends at most, for --dry-run (retries not counted): one candidates call per distinct (domain, query,
 * rubric) (pairs sharing a task's wording and rubric send one identical request), 4 more
 * per pair (validate, seeds, ieg, slots), 1 per training pair whose user has other training
 * pairs (the profile). Fewer go out when other steps' requests coincide too (pairs of one
 * task keeping the same targets) or are cached from an earlier run.
 */
export function plannedCalls(ds: RawDataset, placements: readonly Placement[]): { candidates: number; perPair: number; profiles: number; total: number } {
  const train = placements.filter((p) => p.split === 'train');
  const profiles = train.filter((p) => train.some((o) => o.userId === p.userId && o.id !== p.id)).length;
  const candidates = new Set(ds.pairs.map((p) => PROMPTS.candidates(p)[1]?.content)).size;
  const perPair = 4 * ds.pairs.length;
  return { candidates, perPair, profiles, total: candidates + perPair + profiles };
}
