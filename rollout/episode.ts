// One episode (method §3): render the prompt (query, profile, the evidence state the policy
// last wrote, history) -> one policy call on our own token ids -> parse ->
//   RETRIEVE: memory search in the user's store at the group's snapshot,
//   ASK:      the user simulator answers,
//   STOP:     the episode ends with q* = EXECUTE.
// A parse failure, or a completion cut at max_tokens (finish_reason 'length'), ends the
// episode as 'invalid' with its reason; maxTurns turns without STOP end it as 'max_turns'.
// With rollout.constrained every call is sampled under the policy grammar (and gsteer
// serve's token filter), and each turn records the constraint for the trainer's replay.
// Every policy call is recorded with its prompt ids, the sampled ids and the server's
// logprobs: the loss mask is exactly the completion ids of each turn (method §5), prompts and
// observations are never trained. Sampling seeds are derived from (rollout seed, group,
// index, turn) through util/rng.ts, so a rerun replays the same calls. Infrastructure
// failures (policy server, simulator, store) are thrown, not recorded: they say nothing
// about the policy, and the worker retries the rollout (InputError: never).
import type { Instance } from '../data/schema.ts';
import type { RolloutConfig } from '../configs/schema.ts';
import { encodeChat, type Tokenizer } from '../core/tokenizer.ts';
import { assert } from '../util/errors.ts';
import { Rng } from '../util/rng.ts';
import { parseTurn } from '../structured/turn/grammar.ts';
import type { PolicyClient } from './policy-client.ts';
import { constraintFor, turnConstraint } from './policy-constraint.ts';
import { buildPolicyMessages, policyProfile, type HistoryEntry } from './prompt.ts';
import type { DialogueSoFar, UserSimulator } from './simulator.ts';
import type { ActionKind, EvidenceSlot, Observation, ParseResult, PolicyTurn, Termination, Trajectory, TurnRecord } from '../core/types.ts';
import { parseSnapshotId, type UserStore } from './user-store.ts';

export interface EpisodeDeps {
  policy: PolicyClient;
  simulator: UserSimulator;
  store: UserStore;
  tokenizer: Tokenizer;
}

export interface EpisodeOptions {
  runId: string;
  groupId: string;
  index: number; // position in the group
  policyVersion: number;
  /** Adapter name the policy server knows (requests name it in `model`). */
  model: string;
  snapshotId: string; // `{userId}@{version}`, the same for the whole group
  /** The rollout's seed (derived by the controller from run seed, step, group, index). */
  seed: number;
  rollout: Pick<RolloutConfig, 'maxTurns' | 'maxTokens' | 'temperature' | 'topP' | 'retrieveCandidates' | 'retrieveTopK'> &
    Partial<Pick<RolloutConfig, 'constrained' | 'retrievePreselect'>>;
  /**
   * method §8 baselines: restrict the action menu (and use the baseline prompt, prompt.ts).
   * A turn choosing an action outside the menu is invalid ('unknown_action'). Absent = G-STEER.
   */
  actions?: readonly ActionKind[];
}

/** A parsed turn whose action is not on the menu is invalid, like an unknown action. */
export function checkMenu(parsed: ParseResult, actions: readonly ActionKind[] | undefined): ParseResult {
  if (!parsed.ok || !actions || actions.includes(parsed.turn.action)) return parsed;
  return { ok: false, reason: 'unknown_action', detail: `action ${parsed.turn.action} is not in this agent's menu (${actions.join(', ')})` };
}

/** Sampling seed of one policy call: independent per (seed, group, index, turn), int31. */
export function turnSeed(seed: number, groupId: string, index: number, turn: number): number {
  return Rng.derive(seed, 'policy', groupId, index, turn).nextU32() & 0x7fffffff;
}

export async function runEpisode(deps: EpisodeDeps, instance: Instance, opts: EpisodeOptions): Promise<Trajectory> {
  const snap = parseSnapshotId(opts.snapshotId);
  assert(snap.userId === instance.userId, `snapshot ${opts.snapshotId} is not of user ${instance.userId} (instance ${instance.id})`);
  const userState = await deps.store.read(snap.userId, snap.version);
  // Every method sees the profile, the IntentRL-style clarifier too (paper: "a frozen user profile").
  const profile = policyProfile(instance, userState.profile);
  const { maxTurns } = opts.rollout;
  // A baseline samples under its own menu grammar (structured/turn/menu-grammar.ts): an action off its
  // menu cannot be sampled; unconstrained, checkMenu makes it an invalid turn.
  const constrained = opts.rollout.constrained ?? false;
  const constraintSpec = constraintFor(opts.actions);

  let state: EvidenceSlot[] = [];
  const history: HistoryEntry[] = [];
  const turns: TurnRecord[] = [];
  const dialogue: DialogueSoFar = { turns: [] };
  const asked: string[] = [];
  let retrieveCount = 0;
  let termination: Termination = 'max_turns';
  let refinedQuery: string | null = null;
  let invalid: ParseResult | null = null;

  for (let turn = 1; turn <= maxTurns; turn++) {
    const messages = buildPolicyMessages({
      query: instance.query,
      profile,
      state,
      history,
      turn,
      maxTurns,
      ...(opts.actions ? { actions: opts.actions } : {}),
    });
    const promptIds = encodeChat(deps.tokenizer, messages);
    const res = await deps.policy.complete({
      promptIds,
      maxTokens: opts.rollout.maxTokens,
      temperature: opts.rollout.temperature,
      topP: opts.rollout.topP,
      seed: turnSeed(opts.seed, opts.groupId, opts.index, turn),
      model: opts.model,
      ...(constrained ? { constraint: constraintSpec } : {}),
    });
    const parsed: ParseResult =
      res.finishReason === 'length'
        ? { ok: false, reason: 'truncated', detail: `no end of turn within max_tokens=${opts.rollout.maxTokens} (${res.completionIds.length} tokens sampled)` }
        : res.finishReason === 'abort'
          ? { ok: false, reason: 'grammar_dead_end', detail: `the grammar left no token the model can emit after ${res.completionIds.length} tokens` }
          : checkMenu(parseTurn(res.text), opts.actions);
    const constraint = constrained ? { constraint: turnConstraint(res.applied, opts.rollout.maxTokens, constraintSpec.grammar) } : {};
    const record = (observation: Observation) =>
      turns.push({
        index: turn - 1,
        tokens: { promptIds, completionIds: res.completionIds, logprobs: res.logprobs, ...cachedOf(res) },
        completionText: res.text,
        parsed,
        observation,
        ...constraint,
      });
    if (!parsed.ok) {
      record({ kind: 'none' });
      [termination, invalid] = ['invalid', parsed];
      break;
    }
    const t: PolicyTurn = parsed.turn;
    state = t.state;
    const observation = await act(deps, instance, opts, snap, t, dialogue);
    record(observation);
    if (t.action === 'STOP') {
      [termination, refinedQuery] = ['stop', t.execute];
      break;
    }
    if (t.action === 'RETRIEVE') retrieveCount++;
    // What Retrieve found counts for late activation as a dialogue answer does (method §3.5).
    if (observation.kind === 'memory') (dialogue.memory ??= []).push(...observation.results.map(({ name, purpose, value }) => ({ name, purpose, value })));
    if (observation.kind === 'answer') {
      asked.push(t.execute);
      dialogue.turns.push({ question: t.execute, answer: observation.answer, targetId: observation.targetId });
    }
    history.push({ action: t.action, execute: t.execute, observation });
  }

  return {
    version: 1,
    runId: opts.runId,
    instanceId: instance.id,
    userId: instance.userId,
    groupId: opts.groupId,
    index: opts.index,
    policyVersion: opts.policyVersion,
    snapshotId: opts.snapshotId,
    turns,
    finalSlots: state,
    askedQuestions: asked,
    retrieveCount,
    askCount: asked.length,
    termination,
    ...(invalid && !invalid.ok ? { invalidReason: invalid.reason } : {}),
    refinedQuery,
  };
}

/** The environment's answer to one parsed action. */
async function act(
  deps: EpisodeDeps,
  instance: Instance,
  opts: EpisodeOptions,
  snap: { userId: string; version: number },
  t: PolicyTurn,
  dialogue: DialogueSoFar,
): Promise<Observation> {
  switch (t.action) {
    case 'RETRIEVE': {
      const r = await deps.store.search(snap.userId, snap.version, t.execute, {
        candidates: opts.rollout.retrieveCandidates,
        topK: opts.rollout.retrieveTopK,
        ...(opts.rollout.retrievePreselect ? { preselect: opts.rollout.retrievePreselect } : {}),
      });
      return { kind: 'memory', query: t.execute, results: r.hits };
    }
    case 'ASK': {
      const a = await deps.simulator.answer(t.execute, instance, dialogue);
      // The simulator's accepted reply rides along for the trajectories view; prompts read `answer` only.
      const raw = a.reply !== undefined ? { simulatorReply: a.reply } : {};
      return { kind: 'answer', question: t.execute, answer: a.answer, targetId: a.targetId, ...raw, ...(a.replyError ? { simulatorError: a.replyError } : {}) };
    }
    case 'STOP':
      return { kind: 'none' };
    default: {
      const never: never = t.action;
      throw new Error(`internal: unknown action ${String(never)}`);
    }
  }
}

/** The server's cached prompt tokens, kept on the turn only when it reported them. */
function cachedOf(res: { cachedPromptTokens?: number }): { cachedPromptTokens?: number } {
  return res.cachedPromptTokens === undefined ? {} : { cachedPromptTokens: res.cachedPromptTokens };
}
