// The policy turn, the evidence state and the trajectory record (method §2, §3).
// These are the contracts between rollout/, reward/, trainer/, workers/ and data/sft.

/** Token filters gsteer serve can run after the grammar mask (structured/constraint-spec.ts TOKEN_FILTERS). */
export type TokenFilterKind = 'policy_turn' | 'refiner_turn';

export type SlotStatus = 'uncovered' | 'partial' | 'covered';
export type SlotSource = 'profile' | 'memory' | 'dialogue';

/** One slot of the evidence state Sigma_t. */
export interface EvidenceSlot {
  name: string;
  purpose: string;
  status: SlotStatus;
  value: string; // empty while uncovered
  source: SlotSource;
}

export type ActionKind = 'RETRIEVE' | 'ASK' | 'STOP';

/** A parsed policy turn (the grammar is documented in structured/turn/grammar.ts). */
export interface PolicyTurn {
  state: EvidenceSlot[];
  plan: string;
  action: ActionKind;
  /** Memory query (RETRIEVE), one question (ASK) or the refined query q* (STOP). */
  execute: string;
}

export type InvalidReason =
  | 'empty'
  | 'missing_section'
  | 'duplicate_section'
  | 'bad_slot'
  | 'bad_status'
  | 'bad_source'
  | 'unknown_action'
  | 'empty_execute'
  | 'trailing_text'
  | 'truncated'
  // Added with the grammar (structured/turn/grammar.ts):
  | 'section_order' // a section header out of STATE, PLAN, ACTION, EXECUTE order
  | 'unexpected_line' // a line that is neither a header nor allowed in its section
  | 'empty_plan'
  | 'duplicate_slot' // two slots with the same name
  // Constrained turns (rollout.constrained): the grammar left no token the model can emit.
  | 'grammar_dead_end'
  // A turn of another environment (method §13): not a G-STEER turn; its own parse is in TurnRecord.env.
  | 'env_turn';

export type ParseResult = { ok: true; turn: PolicyTurn } | { ok: false; reason: InvalidReason; detail: string };

/** The simulator's reply when neither the targets nor the persona support an answer (method §3.5): no evidence. */
export const NON_COMMITTAL = "I don't have a particular preference on that.";

/** What the environment returned after a turn. */
export type Observation =
  | { kind: 'memory'; query: string; results: { name: string; purpose: string; value: string; score: number }[] }
  | {
      kind: 'answer';
      question: string;
      answer: string;
      targetId: string | null;
      /** LLM simulator: its accepted reply (JSON text, thinking removed), null when none was accepted; never in a prompt. */
      simulatorReply?: string | null;
      /** LLM simulator: why no reply was accepted (the answer is then the non-committal line). */
      simulatorError?: string;
    }
  | { kind: 'none' };

/** Everything the trainer needs for one policy call. */
export interface TurnTokens {
  promptIds: number[];
  completionIds: number[];
  /** Server logprobs of each sampled completion token (same length as completionIds). */
  logprobs: number[];
  /** Prompt tokens the server served from its prefix cache, when it reports them (not reproducible: depends on timing). */
  cachedPromptTokens?: number;
  /**
   * The adapter version that sampled these tokens (method §5.7): set by the rollout worker to
   * its job's version for every turn (workers/episode-record.ts), so each token says which
   * policy it came from even when an update lands mid-episode.
   */
  policyVersion?: number;
}

/**
 * How a constrained turn was sampled (rollout.constrained): the policy grammar
 * (structured/turn/grammar.ebnf) and, on gsteer serve, its token filter. The trainer replays the
 * completion ids through the same constraint to score each token under its mask.
 */
export interface TurnConstraint {
  /** null: the grammar alone (vLLM applies only the EBNF). */
  tokenFilter: TokenFilterKind | null;
  tokenFilterVersion: number | null;
  /** structured/constraint-spec.ts specHash of what was applied; the trainer checks it against its own. */
  specSha256: string;
  /** The request's max_tokens (the filter's length budget depends on it). */
  maxTokens: number;
  /** The server reported applying it (gsteer serve does; vLLM does not, so the replay is the check). */
  reported: boolean;
}

export interface TurnRecord {
  index: number;
  tokens: TurnTokens;
  completionText: string;
  parsed: ParseResult;
  observation: Observation;
  /**
   * A turn of another environment (method §13; QREF): its parse and observation in words. Such
   * a turn's `parsed` is `{ok: false, reason: 'env_turn'}` and `observation` is `none`.
   */
  env?: EnvTurnView;
  /** Absent: sampled unconstrained. */
  constraint?: TurnConstraint;
}

/** Another environment's turn for people and the dashboard (rollout/env/types.ts). */
export interface EnvTurnView {
  env: string;
  /** `ok` when the turn parsed, else the environment's invalid reason. */
  status: string;
  action: string;
  execute: string;
  plan: string;
  observation: string;
  /** The environment's own JSON record of the turn (what its reward reads; QREF: rollout/qref/env.ts QrefRecord). */
  record?: unknown;
}

/** Another environment's invalid-turn reason (a plain identifier, e.g. QREF's `missing_queries`). */
export type EnvInvalidReason = string & { readonly envReason?: never };

export type Termination = 'stop' | 'invalid' | 'max_turns';

export interface Trajectory {
  version: 1;
  runId: string;
  instanceId: string;
  userId: string;
  groupId: string;
  index: number; // position in the group
  policyVersion: number;
  snapshotId: string; // user-state snapshot all of the group read
  turns: TurnRecord[];
  finalSlots: EvidenceSlot[];
  askedQuestions: string[];
  retrieveCount: number;
  askCount: number;
  termination: Termination;
  /** G-STEER's InvalidReason, or another environment's own reason (QREF: RefinerInvalidReason). */
  invalidReason?: InvalidReason | EnvInvalidReason;
  refinedQuery: string | null; // q*, null unless termination = stop
}
