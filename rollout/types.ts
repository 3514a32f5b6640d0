// The policy turn, the evidence state and the trajectory record (SPEC §2, §3).
// These are the contracts between rollout/, reward/, trainer/, workers/ and data/sft.

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

/** A parsed policy turn (the grammar is documented in rollout/grammar.ts). */
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
  // Added with the grammar (rollout/grammar.ts):
  | 'section_order' // a section header out of STATE, PLAN, ACTION, EXECUTE order
  | 'unexpected_line' // a line that is neither a header nor allowed in its section
  | 'empty_plan'
  | 'duplicate_slot'; // two slots with the same name

export type ParseResult = { ok: true; turn: PolicyTurn } | { ok: false; reason: InvalidReason; detail: string };

/** What the environment returned after a turn. */
export type Observation =
  | { kind: 'memory'; query: string; results: { name: string; purpose: string; value: string; score: number }[] }
  | { kind: 'answer'; question: string; answer: string; targetId: string | null }
  | { kind: 'none' };

/** Everything the trainer needs for one policy call. */
export interface TurnTokens {
  promptIds: number[];
  completionIds: number[];
  /** Server logprobs of each sampled completion token (same length as completionIds). */
  logprobs: number[];
  /** Prompt tokens the server served from its prefix cache, when it reports them (not reproducible: depends on timing). */
  cachedPromptTokens?: number;
}

export interface TurnRecord {
  index: number;
  tokens: TurnTokens;
  completionText: string;
  parsed: ParseResult;
  observation: Observation;
}

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
  invalidReason?: InvalidReason;
  refinedQuery: string | null; // q*, null unless termination = stop
}
