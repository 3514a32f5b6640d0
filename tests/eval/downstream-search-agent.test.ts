// `gsteer eval downstream` with the search agent (eval.downstream.agent.kind search;
// eval/downstream/agent-search.ts) against local HTTP servers: the backbone on the fake vLLM
// server, the search API and the reader on the local search server (the judge is the embedded
// stand-in: the judge's protocol is tested in downstream.test.ts). The backbone
// searches the query, reads the first result and answers with what it read, so each report
// names the document the loop found; every call lands in llm_calls.jsonl and every run in
// agent_runs.jsonl.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runDownstreamCommand } from '../../cli/commands/eval-downstream.ts';
import { DownstreamScoresSchema } from '../../eval/downstream-scores.ts';
import { startFakeVllm, type FakeChatRequest, type FakeVllm } from '../helpers/fake-vllm.ts';
import { startSearchServer, type SearchServer } from '../helpers/search-server.ts';
import { episode, resultOf } from './scored-fixture.ts';

const t = (id: string) => ({ id, description: `${id} detail`, seedQuestion: `${id}?`, seedAnswer: `${id}.`, weight: 1 });
const INSTANCES = [
  { id: 's1', userId: 'A', taskId: 'X', split: 'test', query: 'quiet lakeside hotel', targets: [t('a')] },
  { id: 'u1', userId: 'B', taskId: 'X', split: 'test', query: 'cheap mountain hut', targets: [t('b')] },
];
const CORPUS = [
  { id: 'h1', title: 'The Reed Inn', text: 'A quiet lakeside hotel with twelve rooms.' },
  { id: 'h2', title: 'Col Hut', text: 'A cheap mountain hut above the pass, open in summer.' },
  { id: 'h3', title: 'Budget family hotel', text: 'Family rooms near the lakeside promenade, cheap in winter.' },
];

/** Backbone: search the question, read the first result shown, answer with its title. */
function answer(req: FakeChatRequest): string {
  const user = req.messages.at(-1)!.content;
  const question = /^Question: (.*)$/m.exec(user)![1]!;
  const steps = (user.match(/^Step \d+$/gm) ?? []).length;
  if (steps === 0) return JSON.stringify({ thought: 'search it', action: 'search', queries: [question] });
  if (steps === 1) return JSON.stringify({ thought: 'read the best', action: 'visit', url: /^ {2}- .*? \((\w+)\):/m.exec(user)![1]! });
  return JSON.stringify({ thought: 'done', action: 'answer', answer: `REPORT on "${question}": ${/^Page \w+ \((.*)\):$/m.exec(user)![1]!}` });
}

let llm: FakeVllm;
let web: SearchServer;
let dir: string;
beforeAll(async () => {
  llm = await startFakeVllm({ model: 'Qwen/Qwen3-8B', answer });
  web = await startSearchServer(CORPUS);
  dir = mkdtempSync(join(tmpdir(), 'gsteer-ds-agent-'));
});
afterAll(async () => {
  await llm?.close();
  await web?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('gsteer eval downstream with the search agent', () => {
  it('each query goes through search, read and answer; reports, call records and runs are written', async () => {
    const instances = join(dir, 'instances.jsonl');
    writeFileSync(instances, INSTANCES.map((i) => `${JSON.stringify(i)}\n`).join(''));
    const config = join(dir, 'c.yaml');
    writeFileSync(
      config,
      [
        `runName: ds`,
        `runDir: ${dir}/runs`,
        `data:`,
        `  instances: [${instances}]`,
        `qref:`,
        `  search:`,
        `    kind: http`,
        `    topK: 2`,
        `    http: {url: "${web.url}/search", queryParam: q, topKParam: num, results: organic, id: link, title: title, text: snippet, score: score}`,
        `eval:`,
        `  bootstrap: {samples: 20}`,
        `  downstream:`,
        `    agent: {kind: search, name: Search Agent, baseUrl: ${llm.baseUrl}, model: Qwen/Qwen3-8B, maxRetries: 0, maxSearches: 8, maxReads: 8, reader: {kind: http, prefix: "${web.url}/read/"}}`,
        `    judge: {kind: embedded, rounds: 1}`,
      ].join('\n'),
    );
    const result = join(dir, 'g.json');
    const ep = (id: string, q: string) => ({ ...episode(id, id === 's1' ? 'seen' : 'unseen_user', [[1, true, true]], [true]), refinedQuery: q });
    writeFileSync(result, JSON.stringify(resultOf([ep('s1', 'quiet lakeside hotel rooms'), ep('u1', 'cheap mountain hut pass')], 'gsteer', 'G-STEER')));
    const out = join(dir, 'scores.json');
    const quiet = [
      vi.spyOn(console, 'log').mockImplementation(() => {}),
      vi.spyOn(console, 'error').mockImplementation(() => {}),
      vi.spyOn(process.stderr, 'write').mockImplementation(() => true),
    ];
    let rc: number;
    try {
      rc = await runDownstreamCommand([result, '--config', config, '--out', out]);
    } finally {
      quiet.forEach((m) => m.mockRestore());
    }
    expect(rc).toBe(0);
    const scores = DownstreamScoresSchema.parse(JSON.parse(readFileSync(out, 'utf8')));
    expect(scores.agent).toEqual({ name: 'Search Agent', model: 'Qwen/Qwen3-8B', standIn: false });
    expect(scores.scores).toHaveLength(4); // Original Query and G-STEER x s1, u1
    // the reports: BM25's best match of each query, read through the reader
    const base = join(dir, 'runs', 'ds', 'eval', 'downstream');
    const report = (method: string, id: string) => readFileSync(join(base, 'search-agent', 'reports', method, `${id}.e0.md`), 'utf8');
    expect(report('original-query', 's1')).toBe('REPORT on "quiet lakeside hotel": The Reed Inn');
    expect(report('g-steer', 'u1')).toBe('REPORT on "cheap mountain hut pass": Col Hut');
    // every call recorded: per query 3 agent steps, 1 search, 1 read (and nothing else)
    const calls = readFileSync(join(base, 'llm_calls.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { role: string; status: string });
    const count = (role: string) => calls.filter((c) => c.role === role).length;
    expect([count('agent'), count('search'), count('reader')]).toEqual([12, 4, 4]);
    expect(calls).toHaveLength(20);
    expect(calls.every((c) => c.status === 'ok')).toBe(true);
    const runs = readFileSync(join(base, 'agent_runs.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { end: string; steps: { action: string }[] });
    expect(runs.map((r) => [r.end, r.steps.map((s) => s.action).join(',')])).toEqual(Array(4).fill(['answer', 'search,visit,answer']));
  });
});
