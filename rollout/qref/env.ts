// The QREF refiner as an environment (method §13, the QREF paper; the plugin interface is
// rollout/env/types.ts). One instance = one search step of an agent (data/qref/schema.ts
// Question: the question x, the reasoning trace tau_t, the candidate batch Q_t and the
// evidence ids the step needs). One episode = one policy turn:
//   prompt   refinerMessages(x, tau_t, Q_t) (prompt.ts, the same text SFT trains on)
//   turn     RATIONALE + QUERIES (turn.ts), at most qref.turn.maxQueries queries
//   state    the search backend (bm25 | http) runs the original and the refined batch (top-k
//            each); the evidence filter keeps, per refined query, the results the agent sees
//   reward   reward.ts (recall gain of Q~ over Q minus the query-count cost), computed by the
//            reward part from what the rollout recorded, every component reported, with the
//            filter's counts (precision / recall pooled per update by workers/update-metrics.ts)
// There is no per-user state (STATELESS_USERS). A malformed turn, or one cut at max_tokens,
// is an invalid episode (reward -invalidPenalty), never a crash; a failed search retrieves
// nothing and is counted. Infrastructure failures (the policy server) throw, and the rollout
// worker retries them, as for G-STEER.
import type { RunConfig } from '../../configs/schema.ts';
import type { CorpusDoc, Question } from '../../data/qref/schema.ts';
import { loadQref } from '../../data/qref/load.ts';
import type { Trajectory, TurnRecord } from '../../core/types.ts';
import type { Tokenizer } from '../../core/tokenizer.ts';
import type { PolicyClient } from '../policy-client.ts';
import { withCallGroup, type CallSink } from '../../endpoints/index.ts';
import { turnSeed } from '../episode.ts';
import { trajectoryView } from '../env/view.ts';
import { qrefGrammars } from '../env/grammars.ts';
import { STATELESS_USERS, type Environment, type EnvInstance, type EpisodeJob, type RewardPart, type RolloutPart } from '../env/types.ts';
import { addCounts, filterCounts, NO_COUNTS, type EvidenceFilter, type FilterCounts } from './evidence-filter.ts';
import { qrefReward } from './reward.ts';
import { retrievedIds, type SearchBackend, type SearchOutcome } from './search.ts';
import { turnConstraint } from '../policy-constraint.ts';
import { RecordedBackbone } from '../agent/backbone-recorded.ts';
import { runAgent } from '../agent/loop.ts';
import { PolicyRefiner } from '../agent/refiner-policy.ts';
import { recordedSearch } from '../agent/recorded-tools.ts';

/** A QREF instance: the question record, with the orchestration's fields. */
export interface QrefInstance extends EnvInstance {
  question: Question;
}

export const asQrefInstances = (questions: readonly Question[]): QrefInstance[] =>
  questions.map((q) => ({ id: q.id, userId: q.id, split: q.split, question: q }));

/** What one QREF turn recorded: everything the reward and the metrics read (TurnRecord.env.record). */
export interface QrefRecord {
  /** null: an invalid turn (nothing refined was searched). */
  refined: string[] | null;
  rationale: string | null;
  /** Per original / refined query: the top-k ids, or null for a failed search. */
  originalIds: (string[] | null)[];
  refinedIds: (string[] | null)[] | null;
  /** Per refined query: the kept result indices (null: the filter failed, nothing kept). */
  kept: (number[] | null)[];
  filter: FilterCounts;
  filterFailures: number;
}

export interface QrefDeps {
  policy: PolicyClient;
  tokenizer: Tokenizer;
  search: SearchBackend;
  filter: EvidenceFilter;
}

const ids = (o: SearchOutcome) => (o.ok ? o.hits.map((h) => h.id).join(', ') || '(nothing)' : `failed: ${o.reason}`);

/** The agent loop's limits for one recorded search step: the search, then the recorded answer. */
export const RECORDED_STEP_LIMITS = { maxSteps: 2, maxSearches: 1, maxReads: 0, maxObservationChars: 1000 } as const;

/**
 * One refiner episode (a single policy turn), driven by the search agent's loop
 * (rollout/agent/loop.ts) with the question record as a recorded backbone step: the refiner
 * (the policy) rewrites the record's batch, both batches are searched (the reward compares
 * them), the filter reads each refined result list; an invalid turn searches nothing.
 */
export async function runQrefEpisode(
  deps: QrefDeps,
  inst: QrefInstance,
  job: EpisodeJob,
  cfg: Pick<RunConfig, 'rollout' | 'qref'>,
): Promise<Trajectory & { turns: [TurnRecord] }> {
  const q = inst.question;
  const caps = cfg.qref.turn;
  const refiner = new PolicyRefiner({
    policy: deps.policy,
    tokenizer: deps.tokenizer,
    caps,
    model: job.model,
    constrained: cfg.rollout.constrained,
    sampling: { maxTokens: cfg.rollout.maxTokens, temperature: cfg.rollout.temperature, topP: cfg.rollout.topP },
    seedOf: (turn) => turnSeed(job.seed, job.groupId, job.index, turn),
  });
  const agent = { backbone: new RecordedBackbone({ trace: q.trace, batch: q.batch }), search: deps.search, filter: deps.filter, refiner, reader: null };
  const run = await runAgent(
    agent,
    q.question,
    q.trace,
    { ...RECORDED_STEP_LIMITS, topK: cfg.qref.search.topK },
    { compareOriginal: true, onInvalidRefinement: 'skip' },
  );
  const step = run.steps[0]?.search;
  const policyTurn = refiner.turns[0];
  if (!step || !policyTurn || !step.originalOutcomes) throw new Error(`internal: the recorded step of ${inst.id} ran no refined search`);
  const { promptIds, res, grammar, parsed } = policyTurn;
  const original = step.originalOutcomes;
  const evidence = new Set(q.evidenceIds);
  let record: QrefRecord = {
    refined: null,
    rationale: null,
    originalIds: retrievedIds(original),
    refinedIds: null,
    kept: [],
    filter: NO_COUNTS,
    filterFailures: 0,
  };
  let observation = '';
  if (parsed.ok) {
    // A failed decision (bad_indices, failed_call) keeps nothing and is counted: the agent would
    // see no result of this query, so its evidence counts as retrieved and not kept (method §13).
    const counts = step.outcomes.reduce((c, o, j) => (o.ok ? addCounts(c, filterCounts(o.hits, step.kept[j] ?? [], evidence)) : c), NO_COUNTS);
    const failures = step.outcomes.filter((o, j) => o.ok && step.kept[j] === null).length;
    record = {
      ...record,
      refined: parsed.turn.queries,
      rationale: parsed.turn.rationale,
      refinedIds: retrievedIds(step.outcomes),
      kept: step.kept,
      filter: counts,
      filterFailures: failures,
    };
    observation = step.outcomes.map((o, j) => `${parsed.turn.queries[j]} -> ${ids(o)}; kept ${JSON.stringify(step.kept[j])}`).join('\n');
  }
  const turn: TurnRecord = {
    index: 0,
    tokens: {
      promptIds,
      completionIds: res.completionIds,
      logprobs: res.logprobs,
      ...(res.cachedPromptTokens === undefined ? {} : { cachedPromptTokens: res.cachedPromptTokens }),
    },
    completionText: res.text,
    parsed: { ok: false, reason: 'env_turn', detail: 'a QREF refiner turn; its parse is in env' },
    observation: { kind: 'none' },
    ...(grammar ? { constraint: turnConstraint(res.applied, cfg.rollout.maxTokens, grammar) } : {}),
    env: {
      env: 'qref',
      status: parsed.ok ? 'ok' : parsed.reason,
      action: parsed.ok ? 'REFINE' : 'INVALID',
      execute: parsed.ok ? parsed.turn.queries.join(' | ') : res.text,
      plan: parsed.ok ? parsed.turn.rationale : `${parsed.reason}: ${parsed.detail}`,
      observation: `original: ${original.map(ids).join(' / ')}${observation ? `\nrefined:\n${observation}` : ''}`,
      record,
    },
  };
  return {
    version: 1,
    runId: job.runId,
    instanceId: inst.id,
    userId: inst.userId,
    groupId: job.groupId,
    index: job.index,
    policyVersion: job.policyVersion,
    snapshotId: job.snapshotId,
    turns: [turn],
    finalSlots: [],
    askedQuestions: [],
    retrieveCount: 0,
    askCount: 0,
    termination: parsed.ok ? 'stop' : 'invalid',
    ...(parsed.ok ? {} : { invalidReason: parsed.reason }),
    refinedQuery: parsed.ok ? parsed.turn.queries.join(' | ') : null,
  };
}

/** The record a QREF trajectory carries (throws on a trajectory of another environment). */
export function qrefRecord(traj: Trajectory): QrefRecord {
  const env = traj.turns[0]?.env;
  if (!env || env.env !== 'qref' || !env.record) throw new Error(`internal: trajectory ${traj.groupId}/${traj.index} is not a QREF trajectory`);
  return env.record as QrefRecord;
}

/**
 * The reward and its components (reward.ts), plus the filter's counts (`filter_*`, summed by
 * the metrics into pooled precision / recall) and failed filter calls.
 */
export function qrefScore(traj: Trajectory, inst: QrefInstance, p: RunConfig['qref']['reward']) {
  const r = qrefRecord(traj);
  const b = qrefReward({ evidenceIds: inst.question.evidenceIds, original: r.originalIds, refined: r.refinedIds }, p);
  const { reward, ...rest } = b;
  const components: Record<string, number> = { ...rest };
  components.filter_retrieved = r.filter.retrieved;
  components.filter_kept = r.filter.kept;
  components.filter_evidence_retrieved = r.filter.evidenceRetrieved;
  components.filter_evidence_kept = r.filter.evidenceKept;
  components.filter_failures = r.filterFailures;
  return { reward, components };
}

/** The configured search backend: BM25 over the corpus (embedded) or the HTTP API. */
export async function searchFrom(cfg: RunConfig['qref'], corpus: readonly CorpusDoc[]): Promise<SearchBackend> {
  if (cfg.search.kind === 'http') {
    const { HttpSearch } = await import('./http-search.ts');
    return new HttpSearch(cfg.search.http!); // configs/qref.ts guarantees http when kind = http
  }
  const { Bm25Search } = await import('./bm25.ts');
  return new Bm25Search(corpus, cfg.search.bm25);
}

/**
 * The configured evidence filter: the embedded rule (filter-rule.ts) or the LLM at
 * qref.filter.llm (filter-llm.ts), whose calls go to `sink` under role "filter".
 */
export async function filterFrom(cfg: RunConfig['qref'], sink?: CallSink): Promise<EvidenceFilter> {
  switch (cfg.filter.kind) {
    case 'rule': {
      const { RuleEvidenceFilter } = await import('./filter-rule.ts');
      return new RuleEvidenceFilter(cfg.filter.minCoverage);
    }
    case 'llm': {
      const { llmFilterFrom } = await import('./filter-llm.ts');
      return llmFilterFrom(cfg.filter.llm!, sink); // configs/qref.ts guarantees llm when kind = llm
    }
    default: {
      const never: never = cfg.filter.kind;
      throw new Error(`internal: filter kind ${String(never)}`);
    }
  }
}

/** The QREF data of the config, validated (every problem listed, InputError). */
export const loadQrefData = (cfg: RunConfig) => loadQref({ corpus: cfg.qref.data.corpus, questions: cfg.qref.data.questions }, cfg.qref.turn);

/** `sink`: where the policy client's, the LLM filter's and the searches' calls are recorded (endpoints/ call records). */
export function qrefEnv(cfg: RunConfig, sink?: CallSink): Environment {
  let data: ReturnType<typeof loadQrefData> | null = null;
  const loaded = () => (data ??= loadQrefData(cfg));
  const asQref = (i: EnvInstance) => {
    if (!('question' in i)) throw new Error(`internal: instance ${i.id} is not a QREF instance`);
    return i as QrefInstance;
  };
  return {
    name: 'qref',
    load: () => ({ instances: asQrefInstances(loaded().questions), warnings: [] }),
    async rollout(): Promise<RolloutPart> {
      const [fc, { qwen3Tokenizer }] = await Promise.all([import('../from-config.ts'), import('../../core/tokenizer.ts')]);
      const backend = await searchFrom(cfg.qref, cfg.qref.search.kind === 'bm25' ? loaded().corpus : []);
      const search = sink ? recordedSearch(backend, sink) : backend; // every search in the run's call records (role search)
      const filter = await filterFrom(cfg.qref, sink);
      const tokenizer = qwen3Tokenizer();
      const clients = new Map<string, PolicyClient>();
      return {
        async run({ job, instance, policyUrl }) {
          let policy = clients.get(policyUrl);
          if (!policy) clients.set(policyUrl, (policy = fc.policyClientFrom(cfg, policyUrl, sink)));
          // the policy calls are the group's (endpoints/call-group.ts), as G-STEER's episodes
          return await withCallGroup(job.groupId, () => runQrefEpisode({ policy: policy!, tokenizer, search, filter }, asQref(instance), job, cfg));
        },
        close: async () => undefined,
      };
    },
    reward: async (): Promise<RewardPart> => ({ score: async (traj, inst) => qrefScore(traj, asQref(inst), cfg.qref.reward) }),
    users: async () => STATELESS_USERS,
    view: (traj) => trajectoryView(traj),
    grammars: () => qrefGrammars(cfg.qref.turn.maxQueries),
  };
}
