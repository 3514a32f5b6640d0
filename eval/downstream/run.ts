// `gsteer eval downstream` (method §12; paper "Downstream Report Utility", Tables 4 and 8):
// for every instance of the methods' eval results, the original query (the "Original Query"
// row) and each method's refined q* go to the deep-research agent; the reports are stored
// (reports.ts) and the judge scores each one in `rounds` rounds (judge.ts). The result is a
// `gsteer-downstream` v1 file (eval/downstream-scores.ts) that `gsteer eval compare` tables
// and pools: a report's score = the mean of its rounds, a view's = the mean over its reports.
// An episode without q* (invalid output, no Stop within max turns) gave the user nothing to
// send: its report is the one of the original query (counted in `fellBack`).
import pLimit from 'p-limit';
import type { EvalGroup } from '../../data/splits.ts';
import type { Instance } from '../../data/schema.ts';
import type { Progress } from '../../util/progress.ts';
import type { DownstreamScores } from '../downstream-scores.ts';
import type { ResearchAgent } from './agent.ts';
import type { JudgeRound, ReportJudge } from './judge.ts';
import type { ReportStore } from './reports.ts';

export interface MethodQueries {
  name: string;
  original: boolean; // the unrefined query (queries come from the instances)
  source: string | null; // the eval result its refined queries came from
  /** instanceId -> refined query of each episode (null: the episode produced none). */
  queries: Map<string, (string | null)[]>;
}

export interface DownstreamRun {
  instances: ReadonlyMap<string, Instance>;
  groups: ReadonlyMap<string, EvalGroup>; // test instances' groups; absent = train (overall only)
  methods: readonly MethodQueries[];
  /** null: every report must already be in the store (--reports DIR). */
  agent: ResearchAgent | null;
  agentInfo: DownstreamScores['agent'];
  store: ReportStore;
  judge: ReportJudge;
  rounds: number;
  concurrency: number;
  progress?: (total: number) => Progress;
}

export interface DownstreamOutcome {
  scores: DownstreamScores;
  researched: number; // reports the agent wrote in this run
  reused: number; // reports read from the store
  fellBack: number; // episodes without q*: scored on the original query's report
}

/** The method of the original query: every instance any method was evaluated on, one episode. */
export function originalQueries(methods: readonly MethodQueries[], instances: ReadonlyMap<string, Instance>): MethodQueries {
  const ids = [...new Set(methods.flatMap((m) => [...m.queries.keys()]))].sort();
  return { name: 'Original Query', original: true, source: null, queries: new Map(ids.map((id) => [id, [(instances.get(id) as Instance).query]])) };
}

export async function runDownstream(r: DownstreamRun): Promise<DownstreamOutcome> {
  const jobs = r.methods.flatMap((m) =>
    [...m.queries.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).flatMap(([id, qs]) => qs.map((q, episode) => ({ m, id, episode, q }))),
  );
  const bar = r.progress?.(jobs.length);
  const limit = pLimit(r.concurrency);
  let researched = 0;
  let reused = 0;
  let fellBack = 0;

  const report = async (method: string, instanceId: string, episode: number, query: string): Promise<string> => {
    const stored = r.store.read(method, instanceId, episode, query);
    if (stored !== null) {
      reused++;
      return stored;
    }
    if (!r.agent) throw new Error('internal: no agent and no stored report'); // external stores throw first
    const text = await r.agent.research(query);
    r.store.write(method, instanceId, episode, query, text);
    researched++;
    return text;
  };

  const scores = await Promise.all(
    jobs.map(({ m, id, episode, q }) =>
      limit(async () => {
        const instance = r.instances.get(id) as Instance;
        // No q*: the user would have sent the original query, so its report is the original's.
        const text = q === null ? await report('Original Query', id, 0, instance.query) : await report(m.name, id, episode, q);
        if (q === null) fellBack++;
        const rounds: JudgeRound[] = [];
        for (let k = 0; k < r.rounds; k++) rounds.push(await r.judge.score(instance, text, k));
        bar?.tick(1, `${m.name} ${id}`);
        return { instanceId: id, group: r.groups.get(id) ?? null, method: m.name, episode, rounds };
      }),
    ),
  );
  bar?.done();
  return {
    scores: {
      format: 'gsteer-downstream',
      v: 1,
      agent: r.agentInfo,
      judge: { model: r.judge.model, standIn: r.judge.standIn, rounds: r.rounds },
      methods: r.methods.map((m) => ({ name: m.name, original: m.original, source: m.source })),
      scores,
    },
    researched,
    reused,
    fellBack,
  };
}
