// The agent loop driving a QREF training episode (rollout/qref/env.ts runQrefEpisode) against local
// HTTP servers: the refiner is the committed QREF base (models/tiny-qref) behind gsteer's own
// policy server (serve/server.ts, the /v1/completions route rollouts use, sampled under the
// refiner grammar and its token filter), the search backend is a Serper-shaped API on the local search server (BM25
// over the demo corpus), the evidence filter an LLM on the fake vLLM server. Every call lands in
// one sink: policy, search, filter. The reward's recalls are recomputed here from the ids the
// episode recorded and the question's evidence.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { RunConfigSchema } from '../../../configs/schema.ts';
import { qwen3Tokenizer } from '../../../core/tokenizer.ts';
import { loadQref } from '../../../data/qref/load.ts';
import type { CallRecord } from '../../../endpoints/index.ts';
import { recordedSearch } from '../../../rollout/agent/recorded-tools.ts';
import { policyClientFrom } from '../../../rollout/from-config.ts';
import { asQrefInstances, filterFrom, qrefRecord, qrefScore, runQrefEpisode, searchFrom } from '../../../rollout/qref/env.ts';
import { startServer, type RunningServer } from '../../../serve/server.ts';
import { startFakeVllm, type FakeVllm } from '../../helpers/fake-vllm.ts';
import { startSearchServer, type SearchServer } from '../../helpers/search-server.ts';

const MODEL = join(import.meta.dirname, '../../../models/tiny-qref');
const data = loadQref(
  { corpus: 'data/qref/demo/corpus.jsonl', questions: 'data/qref/demo/questions.jsonl' },
  { maxQueries: 5, maxQueryChars: 200, maxRationaleChars: 400 },
);

let policy: RunningServer;
let llm: FakeVllm;
let web: SearchServer;
beforeAll(async () => {
  policy = await startServer({ modelDir: MODEL, servedModelName: 'tiny-qref', backend: 'wasm' });
  llm = await startFakeVllm({ model: 'Qwen/Qwen3-8B', answer: () => '{"kept": [0]}' }); // keep each query's top result
  web = await startSearchServer(data.corpus);
}, 120_000);
afterAll(async () => {
  await policy?.close();
  await llm?.close();
  await web?.close();
});

describe('a QREF episode through the agent loop over HTTP', () => {
  it('the policy refines, the search API runs both batches, the LLM filter keeps; every call recorded', async () => {
    const records: CallRecord[] = [];
    const sink = { record: (r: CallRecord) => void records.push(r) };
    const cfg = RunConfigSchema.parse({
      env: 'qref',
      policy: { model: 'tiny-qref', server: 'external', baseUrl: `${policy.url}/v1`, maxRetries: 0 },
      rollout: { maxTokens: 96, temperature: 0.7 },
      qref: {
        search: {
          kind: 'http',
          topK: 3,
          http: {
            url: `${web.url}/search`,
            queryParam: 'q',
            topKParam: 'num',
            results: 'organic',
            id: 'link',
            title: 'title',
            text: 'snippet',
            score: 'score',
          },
        },
        filter: { kind: 'llm', llm: { baseUrl: llm.baseUrl, maxRetries: 0 } },
      },
    });
    const search = recordedSearch(await searchFrom(cfg.qref, []), sink);
    const deps = { policy: policyClientFrom(cfg, `${policy.url}/v1`, sink), tokenizer: qwen3Tokenizer(), search, filter: await filterFrom(cfg.qref, sink) };
    const inst = asQrefInstances(data.questions).find((q) => q.id === 'q-001')!;
    const job = { runId: 'r', groupId: 's000001-g0', index: 0, policyVersion: 0, model: 'tiny-qref', snapshotId: 'q-001@0', seed: 5 };
    const traj = await runQrefEpisode(deps, inst, job, cfg);

    // sampled under the refiner grammar and the refiner_turn filter (the server says so): the turn parses
    expect(traj.turns[0].constraint).toMatchObject({ tokenFilter: 'refiner_turn', tokenFilterVersion: 1, reported: true, maxTokens: 96 });
    expect(traj.termination, traj.turns[0].completionText).toBe('stop');
    const rec = qrefRecord(traj);
    const refined = rec.refined!;
    expect(refined.length).toBeGreaterThan(0);
    // the search API ran the original batch (3 queries) and the refined one; the filter saw each refined result list
    const searched = web.requests.map((r) => r.query);
    expect(searched.slice().sort()).toEqual([...inst.question.batch, ...refined].sort());
    expect(rec.kept).toEqual(rec.refinedIds!.map((ids) => (ids!.length ? [0] : [])));
    // the reward's recalls from the recorded ids: |U(B) ∩ E| / |E|
    const recall = (ids: (string[] | null)[]) =>
      new Set(ids.flat().filter((id) => id !== null && inst.question.evidenceIds.includes(id))).size / inst.question.evidenceIds.length;
    const s = qrefScore(traj, inst, cfg.qref.reward);
    expect(s.components.recall_original).toBe(recall(rec.originalIds));
    expect(s.components.recall_refined).toBe(recall(rec.refinedIds!));
    // one policy call, one search record per query, one filter call per refined list with results
    const count = (role: string) => records.filter((r) => r.role === role && r.status === 'ok').length;
    expect([count('policy'), count('search'), count('filter')]).toEqual([
      1,
      inst.question.batch.length + refined.length,
      rec.refinedIds!.filter((ids) => ids!.length).length,
    ]);
    expect(records).toHaveLength(count('policy') + count('search') + count('filter'));
  }, 120_000);
});
