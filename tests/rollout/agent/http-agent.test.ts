// The search agent (rollout/agent/) against local HTTP servers: an LLM backbone and the LLM
// evidence filter on the fake vLLM server, the search API and the page reader on a local
// search server (tests/helpers/search-server.ts: BM25 over a hand-made corpus behind HTTP).
// Every call is recorded in one sink: `agent` and `filter` by the endpoints layer, `search` and
// `reader` by rollout/agent/recorded-tools.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunConfigSchema } from '../../../configs/schema.ts';
import { createEndpoint, type CallRecord } from '../../../endpoints/index.ts';
import { LlmBackbone } from '../../../rollout/agent/backbone-llm.ts';
import { runAgent } from '../../../rollout/agent/loop.ts';
import { HttpReader } from '../../../rollout/agent/reader.ts';
import { recordedReader, recordedSearch } from '../../../rollout/agent/recorded-tools.ts';
import { filterFrom } from '../../../rollout/qref/env.ts';
import { HttpSearch } from '../../../rollout/qref/http-search.ts';
import { startFakeVllm, type FakeChatRequest, type FakeVllm } from '../../helpers/fake-vllm.ts';
import { startSearchServer, type SearchServer } from '../../helpers/search-server.ts';

const corpus = [
  { id: 'd1', title: 'Amos Kell', text: 'Amos Kell, the engineer, was born in Marrowby.' },
  { id: 'd2', title: 'Kestwick Bridge', text: 'Kestwick Bridge: stone arches over the river, designed by Amos Kell.' },
  { id: 'd3', title: 'Marrowby', text: 'Marrowby is a market town on the river Lune.' },
];
const limits = { maxSteps: 5, maxSearches: 2, maxReads: 1, topK: 2, maxObservationChars: 500 };

/** The backbone's replies by step (the number of "Step k" blocks in its prompt), the filter's by query. */
function answer(req: FakeChatRequest): string {
  const user = req.messages.at(-1)!.content;
  if (req.response_format?.json_schema?.name === 'evidence_filter') return /Search query: Marrowby river/.test(user) ? '{"kept": [7]}' : '{"kept": [0]}';
  const step = (user.match(/^Step \d+$/gm) ?? []).length;
  return JSON.stringify(
    [
      { thought: 'The bridge was designed by Amos Kell; I need his birthplace.', action: 'search', queries: ['Amos Kell born', 'Marrowby river'] },
      { thought: 'd1 says Marrowby; read it.', action: 'visit', url: 'd1' },
      { thought: 'Amos Kell was born in Marrowby.', action: 'answer', answer: 'Marrowby' },
    ][step],
  );
}

let llm: FakeVllm;
let web: SearchServer;
beforeAll(async () => {
  llm = await startFakeVllm({ model: 'Qwen/Qwen3-8B', answer });
  web = await startSearchServer(corpus, { failQueries: [] });
});
afterAll(async () => {
  await llm.close();
  await web.close();
});

describe('the search agent over HTTP', () => {
  it('plans, searches, filters, reads and answers; every call is in the sink', async () => {
    const records: CallRecord[] = [];
    const sink = { record: (r: CallRecord) => void records.push(r) };
    const cfg = RunConfigSchema.parse({ env: 'qref', qref: { filter: { kind: 'llm', llm: { baseUrl: llm.baseUrl, maxRetries: 0 } } } });
    const search = recordedSearch(
      new HttpSearch({
        ...cfg.qref.search,
        ...{
          url: `${web.url}/search`,
          method: 'GET',
          queryParam: 'q',
          topKParam: 'num',
          body: {},
          headers: {},
          apiKeyHeader: 'Authorization',
          apiKeyPrefix: 'Bearer ',
          results: 'organic',
          id: 'link',
          title: 'title',
          text: 'snippet',
          score: 'score',
          timeoutMs: 60_000,
          maxResponseMb: 8,
        },
      }),
      sink,
    );
    const reader = recordedReader(
      new HttpReader({ prefix: `${web.url}/read/`, timeoutMs: 60_000, maxResponseMb: 8, apiKeyHeader: 'Authorization', apiKeyPrefix: 'Bearer ' }),
      sink,
    );
    const endpoint = createEndpoint(
      {
        role: 'agent',
        baseUrl: llm.baseUrl,
        model: 'Qwen/Qwen3-8B',
        apiKeyEnv: 'NONE_SET',
        timeoutMs: 60_000,
        maxRetries: 0,
        concurrency: 2,
        chatTemplateKwargs: { enable_thinking: false },
      },
      { sink },
    );
    const backbone = new LlmBackbone({ endpoint, maxQueries: 5, temperature: 0.6, maxTokens: 400 });
    const run = await runAgent(
      { backbone, search, filter: await filterFrom(cfg.qref, sink), refiner: null, reader },
      'On which river is the birthplace of the engineer of Kestwick Bridge?',
      '',
      limits,
    );

    expect(run).toMatchObject({ end: 'answer', answer: 'Marrowby', searches: 1, reads: 1 });
    const s = run.steps[0]!.search!;
    // BM25 top 2: "Amos Kell born" -> d1, d2; "Marrowby river" -> d3, d1. The filter kept [0] of the
    // first and answered [7] (out of range) for the second: a bad_indices decision, nothing kept
    expect(s.outcomes.map((o) => (o.ok ? o.hits.map((h) => h.id) : o.reason))).toEqual([
      ['d1', 'd2'],
      ['d3', 'd1'],
    ]);
    expect(s.kept).toEqual([[0], null]);
    expect(run.steps[0]!.observation).toBe(
      'Results for "Amos Kell born":\n  - Amos Kell (d1): Amos Kell, the engineer, was born in Marrowby.\nResults for "Marrowby river":\n  (no result kept)',
    );
    expect(run.steps[1]!.observation).toBe('Page d1 (Amos Kell):\nTitle: Amos Kell\n\nAmos Kell, the engineer, was born in Marrowby.');
    // the backbone's second and third prompts carry the earlier steps and what is left
    const body = (r: (typeof llm.requests)[number]) => r.body as unknown as FakeChatRequest;
    const prompts = llm.requests.filter((r) => body(r).response_format?.json_schema?.name === 'agent_step').map((r) => body(r).messages.at(-1)!.content);
    expect(prompts).toHaveLength(3);
    expect(prompts[1]).toContain('Action: search: ["Amos Kell born","Marrowby river"]');
    expect(prompts[2]).toMatch(/Action: visit: d1\nObservation:\nPage d1/);
    expect(prompts[2]!.endsWith('Left: 3 step(s), 1 search(es), 0 read(s).')).toBe(true); // a search is left: not only an answer
    // one record per call, in the order they ended: 3 agent steps, 2 searches, 2 filter calls, 1 read
    const byRole = (role: string) => records.filter((r) => r.role === role);
    expect([byRole('agent').length, byRole('search').length, byRole('filter').length, byRole('reader').length]).toEqual([3, 2, 2, 1]);
    expect(records.every((r) => r.status === 'ok')).toBe(true);
    expect(byRole('search').map((r) => r.endpoint)).toEqual([`http:${new URL(web.url).host}`, `http:${new URL(web.url).host}`]);
    expect(web.requests.map((r) => r.path)).toEqual(['/search', '/search', '/read/d1']);
  });

  it('a failed search or read is an observation and a failed record, never a throw', async () => {
    const records: CallRecord[] = [];
    const sink = { record: (r: CallRecord) => void records.push(r) };
    const down = await startSearchServer(corpus, { failQueries: ['Amos Kell born'] });
    try {
      const search = recordedSearch(
        new HttpSearch({
          url: `${down.url}/search`,
          method: 'GET',
          queryParam: 'q',
          topKParam: 'num',
          body: {},
          headers: {},
          apiKeyHeader: 'Authorization',
          apiKeyPrefix: 'Bearer ',
          results: 'organic',
          id: 'link',
          title: 'title',
          text: 'snippet',
          score: 'score',
          timeoutMs: 5000,
          maxResponseMb: 8,
        }),
        sink,
      );
      const reader = recordedReader(
        new HttpReader({ prefix: `${down.url}/read/`, timeoutMs: 5000, maxResponseMb: 8, apiKeyHeader: 'Authorization', apiKeyPrefix: 'Bearer ' }),
        sink,
      );
      const scripted = [
        { action: 'search' as const, thought: '', queries: ['Amos Kell born'] },
        { action: 'visit' as const, thought: '', url: 'no-such-page' },
        { action: 'answer' as const, thought: '', answer: 'unknown' },
      ];
      let k = 0;
      const run = await runAgent(
        { backbone: { name: 's', next: async () => ({ ok: true, decision: scripted[k++]! }) }, search, filter: null, refiner: null, reader },
        'Q?',
        '',
        limits,
      );
      expect(run.steps.map((s) => s.observation)).toEqual([
        'Results for "Amos Kell born":\n  (search failed: http_status)',
        '(could not read no-such-page: http_status)',
        '',
      ]);
      expect(records.map((r) => [r.role, r.status])).toEqual([
        ['search', 'error'],
        ['reader', 'error'],
      ]);
      expect(records[0]!.error).toMatch(/^http_status: http:127\.0\.0\.1:\d+ answered HTTP 500: search backend down$/);
    } finally {
      await down.close();
    }
  });

  it('a page past the reader maxResponseMb is a failed read (too_large), not read whole', async () => {
    const at = (maxResponseMb: number) =>
      new HttpReader({ prefix: `${web.url}/read/`, timeoutMs: 60_000, maxResponseMb, apiKeyHeader: 'Authorization', apiKeyPrefix: 'Bearer ' });
    // mib(0.00001) = 10 bytes: d1's page ("Title: ...") is longer
    expect(await at(0.00001).read('d1')).toMatchObject({ ok: false, reason: 'too_large', detail: expect.stringMatching(/cap of 10 bytes.* for d1$/) });
    expect(await at(8).read('d1')).toMatchObject({ ok: true, url: 'd1' });
  });
});
