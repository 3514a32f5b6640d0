// The search agent's parts and records (rollout/agent/README.md; the QREF paper, method §13.5: "QREF
// consists of two components"): the backbone agent pi_theta decides, at each step t, a
// reasoning trace tau_t and an action a_t in {search, visit, answer} with its content c_t; a
// search's candidate batch Q_t goes to the query refiner R_phi (when there is one), the
// refined batch to the search engine, each result list to the evidence filter F_psi, and the
// kept results back to the agent as the step's observation; a visit reads one page; an answer
// ends the run. Step limits bound the whole run, its searches and its reads.
import type { RefinerInput } from '../qref/prompt.ts';
import type { SearchOutcome } from '../qref/search.ts';

export interface AgentLimits {
  /** Backbone decisions in all (each search, visit or answer is one). */
  maxSteps: number;
  /** Search actions (one batch each); PDR-Bench's second agent: 8. */
  maxSearches: number;
  /** Visit actions (one page each); PDR-Bench's second agent: 8. */
  maxReads: number;
  /** Results per query. */
  topK: number;
  /** A read page or a result's text beyond this many code points is cut in the observation. */
  maxObservationChars: number;
}

/** What the backbone decided at one step (the paper's tau_t, a_t, c_t). */
export type BackboneAction =
  | { action: 'search'; thought: string; queries: string[] }
  | { action: 'visit'; thought: string; url: string }
  | { action: 'answer'; thought: string; answer: string };

/** A failed decision (a reply the endpoint refused on every attempt): the run ends, never throws. */
export type BackboneDecision = { ok: true; decision: BackboneAction } | { ok: false; reason: string; detail: string };

/** What the backbone sees before deciding: the question, its own earlier steps, what is left. */
export interface AgentView {
  question: string;
  /** Reasoning the run starts from (a recorded step's trace), "" for a fresh question. */
  trace: string;
  steps: readonly AgentStep[];
  left: { steps: number; searches: number; reads: number };
  /** True on the last allowed step, or when no search and no read is left: only `answer` is accepted. */
  mustAnswer: boolean;
}

export interface Backbone {
  readonly name: string;
  next(view: AgentView): Promise<BackboneDecision>;
}

/** The refiner's decision on one batch: the refined queries, or why there are none (an invalid turn). */
export type Refinement = { ok: true; rationale: string; queries: string[] } | { ok: false; reason: string; detail: string };

export interface Refiner {
  refine(input: RefinerInput): Promise<Refinement>;
}

/** A read page, or why there is none. */
export type ReadOutcome = { ok: true; url: string; title: string; text: string } | { ok: false; reason: string; detail: string };

export interface Reader {
  readonly name: string;
  read(url: string): Promise<ReadOutcome>;
}

/** One search step: the agent's batch, the refiner's, what was sent and what came back. */
export interface SearchRecord {
  original: string[];
  /** The refiner's queries; null without a refiner or for an invalid refiner turn. */
  refined: string[] | null;
  rationale: string | null;
  /** `none` (no refiner), `ok`, or the invalid turn's reason. */
  refiner: string;
  /** The queries sent to the search engine (refined, or the original batch as the fallback rule says). */
  issued: string[];
  outcomes: SearchOutcome[];
  /** The original batch's outcomes when the run compares them (the QREF reward's counterfactual). */
  originalOutcomes: SearchOutcome[] | null;
  /** Per issued query: the kept result indices (null: the filter failed, nothing kept). */
  kept: (number[] | null)[];
}

export interface AgentStep {
  index: number;
  thought: string;
  action: 'search' | 'visit' | 'answer' | 'over_limit' | 'backbone_failed';
  search?: SearchRecord;
  visit?: { url: string; ok: boolean; detail: string };
  /** What the backbone is shown of this step at its next decision. */
  observation: string;
}

export interface AgentRun {
  question: string;
  steps: AgentStep[];
  /** The final answer (or report); null when the run ended without one. */
  answer: string | null;
  end: 'answer' | 'step_limit' | 'backbone_failed';
  searches: number;
  reads: number;
}
