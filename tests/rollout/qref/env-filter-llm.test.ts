// The QREF episode (rollout/qref/env.ts; method §13) with `qref.filter.kind: llm`: the filter
// built by filterFrom from the run config talks to the fake vLLM server, whose scripted
// decisions per refined query make the filter counts and metrics (worked by hand below).
import { afterEach, describe, expect, it } from 'vitest';
import { RunConfigSchema } from '../../../configs/schema.ts';
import { qwen3Tokenizer } from '../../../core/tokenizer.ts';
import type { CallRecord } from '../../../endpoints/index.ts';
import { Bm25Search } from '../../../rollout/qref/bm25.ts';
import { asQrefInstances, filterFrom, qrefRecord, qrefScore, runQrefEpisode } from '../../../rollout/qref/env.ts';
import { filterMetrics } from '../../../rollout/qref/evidence-filter.ts';
import type { PolicyClient } from '../../../rollout/policy-client.ts';
import { startFakeVllm, type FakeVllm } from '../../helpers/fake-vllm.ts';

const corpus = [
  { id: 'd1', title: 'Amos Kell', text: 'Amos Kell, the engineer, was born in Marrowby.' },
  { id: 'd2', title: 'Kestwick Bridge', text: 'Kestwick Bridge: stone arches over the river, built by Amos Kell.' },
  { id: 'd3', title: 'Marrowby', text: 'Marrowby is a market town on the river Lune.' },
  { id: 'd4', title: 'Oat cakes', text: 'A cooking recipe with oats and butter.' },
];
const [inst] = asQrefInstances([
  {
    id: 'q1',
    split: 'train',
    question: 'On which river is the town where the engineer Amos Kell was born?',
    evidenceIds: ['d1', 'd3'],
    trace: 'Kestwick Bridge was built by Amos Kell.',
    batch: ['Kestwick Bridge builder'],
  },
]);
const job = { runId: 'r', groupId: 's000001-g0', index: 0, policyVersion: 0, model: 'policy-v0', snapshotId: 'q1@0', seed: 3 };
const policy = {
  complete: async () => ({
    completionIds: [1],
    logprobs: [-0.1],
    text: 'RATIONALE: r\nQUERIES:\n- Amos Kell\n- Marrowby river\n- Marrowby town\n',
    finishReason: 'stop',
  }),
} as unknown as PolicyClient;

// BM25 top 10 (bm25.test.ts's rules; ranks checked below through refinedIds):
//   "Amos Kell"      -> d1, d2       the LLM keeps [0]     = d1
//   "Marrowby river" -> d3, d1, d2   the LLM keeps [0, 2]  = d3, d2
//   "Marrowby town"  -> d3, d1       the LLM answers [1, 1]: bad_indices, nothing kept, counted
const replies: Record<string, string> = { 'Amos Kell': '{"kept": [0]}', 'Marrowby river': '{"kept": [2, 0]}', 'Marrowby town': '{"kept": [1, 1]}' };

let fake: FakeVllm | null = null;
afterEach(async () => {
  await fake?.close();
  fake = null;
});

describe('QREF episode with the LLM filter', () => {
  it('the filter counts and metrics come from the LLM decisions', async () => {
    fake = await startFakeVllm({
      model: 'Qwen/Qwen3-8B',
      answer: (req) => replies[/^Search query: (.*)$/m.exec(req.messages[1]!.content)![1]!] ?? 'no such query',
    });
    const cfg = RunConfigSchema.parse({
      env: 'qref',
      rollout: { constrained: false, maxTokens: 64 },
      qref: { filter: { kind: 'llm', llm: { baseUrl: fake.baseUrl, maxRetries: 0 } } },
    });
    const records: CallRecord[] = [];
    const filter = await filterFrom(cfg.qref, { record: (r) => void records.push(r) });
    expect(filter.name).toBe('llm');
    const traj = await runQrefEpisode({ policy, tokenizer: qwen3Tokenizer(), search: new Bm25Search(corpus), filter }, inst!, job, cfg);
    const rec = qrefRecord(traj);
    expect(rec.refinedIds).toEqual([
      ['d1', 'd2'],
      ['d3', 'd1', 'd2'],
      ['d3', 'd1'],
    ]);
    expect(rec.kept).toEqual([[0], [0, 2], null]);
    expect(rec.filterFailures).toBe(1);
    // retrieved 2 + 3 + 2 = 7; kept 1 + 2 + 0 = 3; evidence retrieved 1 + 2 + 2 = 5 (d1; d3, d1; d3, d1);
    // evidence kept 1 + 1 + 0 = 2 (d1; d3)
    expect(rec.filter).toEqual({ retrieved: 7, kept: 3, evidenceRetrieved: 5, evidenceKept: 2 });
    const s = qrefScore(traj, inst!, cfg.qref.reward);
    expect(s.components).toMatchObject({ filter_retrieved: 7, filter_kept: 3, filter_evidence_retrieved: 5, filter_evidence_kept: 2, filter_failures: 1 });
    // P = 2/3, R = 2/5, F1 = 2PR/(P+R) = (8/15)/(16/15) = 1/2, keep rate 3/7
    const m = filterMetrics({
      retrieved: s.components.filter_retrieved!,
      kept: s.components.filter_kept!,
      evidenceRetrieved: s.components.filter_evidence_retrieved!,
      evidenceKept: s.components.filter_evidence_kept!,
    });
    expect(m.filter_precision).toBeCloseTo(2 / 3, 12);
    expect(m.filter_recall).toBeCloseTo(2 / 5, 12);
    expect(m.filter_f1).toBeCloseTo(0.5, 12);
    expect(m.filter_keep_rate).toBeCloseTo(3 / 7, 12);
    // one call per refined query, recorded under role "filter", to the configured model
    expect(fake.requests.map((r) => r.body.model)).toEqual(['Qwen/Qwen3-8B', 'Qwen/Qwen3-8B', 'Qwen/Qwen3-8B']);
    expect(records.map((r) => [r.role, r.status])).toEqual([
      ['filter', 'ok'],
      ['filter', 'ok'],
      ['filter', 'ok'],
    ]);
    expect(traj.turns[0].env?.observation).toContain('Marrowby town -> d3, d1; kept null');
  });

  it('kind llm without qref.filter.llm is refused with the rule and the fix', () => {
    const r = RunConfigSchema.safeParse({ env: 'qref', qref: { filter: { kind: 'llm' } } });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.message).join('\n')).toMatch(
      /qref\.filter\.kind is "llm" but qref\.filter\.llm is not set; set qref\.filter\.llm\.baseUrl/,
    );
  });
});
