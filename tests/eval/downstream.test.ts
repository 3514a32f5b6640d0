// `gsteer eval downstream` end to end against a real HTTP OpenAI-compatible server (the fake
// vLLM test server): the agent (chat kind) writes "REPORT FOR: <query>"; the judge follows the
// PQR protocol (eval/downstream/pqr.ts): its weights and one criterion per dimension are fixed
// below, and its scorer scores each criterion from a formula of (method, instance, episode,
// round) read back from the report and the request's seed. Every expected number below is
// worked by hand from that formula and the hierarchical average.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runDownstreamCommand } from '../../cli/commands/eval-downstream.ts';
import { DownstreamScoresSchema, downstreamView, type DownstreamScores } from '../../eval/downstream-scores.ts';
import { seededResampler } from '../../eval/bootstrap.ts';
import type { View } from '../../eval/views.ts';
import { PqrJudge } from '../../eval/downstream/judge.ts';
import { StandInPqrSteps } from '../../eval/downstream/judge-standin.ts';
import { standInReport } from '../../eval/downstream/agent.ts';
import { InputError } from '../../util/errors.ts';
import { readResultFile } from '../../eval/result-file.ts';
import { startFakeVllm, type FakeChatRequest, type FakeVllm } from '../helpers/fake-vllm.ts';
import { episode, resultOf } from './scored-fixture.ts';

const t = (id: string) => ({ id, description: `${id} detail`, seedQuestion: `${id}?`, seedAnswer: `${id}.`, weight: 1 });
// users A (train), B, C; tasks X (train), Y, Z  ->  s1 seen, u1 unseen_user, t1 unseen_task, b1 both_unseen
const INSTANCES = [
  { id: 'tr1', userId: 'A', taskId: 'X', split: 'train', query: 'orig tr1', targets: [t('x')] },
  { id: 's1', userId: 'A', taskId: 'X', split: 'test', query: 'orig s1', targets: [t('a')] },
  { id: 'u1', userId: 'B', taskId: 'X', split: 'test', query: 'orig u1', targets: [t('b')] },
  { id: 't1', userId: 'A', taskId: 'Y', split: 'test', query: 'orig t1', targets: [t('c')] },
  { id: 'b1', userId: 'C', taskId: 'Z', split: 'test', query: 'orig b1', targets: [t('d')] },
];

// The scorer's formula: F = B[method] + I[instance] + episode + R[round]; Q = 4 + I[instance] + R[round].
// Weights: P goal 1, content 1, the others 0 (so P = the mean of goal and content = F); Q depth 1.
// Criterion scores: goal F, content F, presentation 1, actionability 2R; depth Q, logic Q - 1, clarity Q.
const B: Record<string, number> = { orig: 1, direct: 2, gsteer: 3 };
const I: Record<string, number> = { s1: 0, u1: 1, t1: 2, b1: 3 };
const R = [0, 1, 2]; // mean 1

function judgeAnswer(req: FakeChatRequest): string {
  const name = req.response_format?.json_schema?.name ?? '';
  if (name === 'pqr_p_weights') return JSON.stringify({ rationale: 'r', weights: { goal: 1, content: 1, presentation: 0, actionability: 0 } });
  if (name === 'pqr_q_weights') return JSON.stringify({ rationale: 'r', weights: { depth: 1, logic: 0, clarity: 0 } });
  if (name.endsWith('_criteria')) return JSON.stringify({ criteria: [{ criterion: 'c', explanation: 'e', weight: 1 }] });
  const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
  const m = /REPORT FOR: (\S+) (\S+)(?: e(\d))?/.exec(user);
  if (!m) throw new Error(`no report in ${user}`);
  const k = R[req.seed as number] as number;
  const inst = I[m[2] as string] as number;
  const score = (id: string, n: number) => ({ id, analysis: 'a', score: n });
  if (name === 'pqr_p_scores') {
    const f = (B[m[1] as string] as number) + inst + Number(m[3] ?? 0) + k;
    return JSON.stringify({ scores: [score('goal.1', f), score('content.1', f), score('presentation.1', 1), score('actionability.1', 2 * k)] });
  }
  const q = 4 + inst + k;
  return JSON.stringify({ scores: [score('depth.1', q), score('logic.1', q - 1), score('clarity.1', q)] });
}

let server: FakeVllm;
let dir: string;
let config: string;
let direct: string;
let gsteer: string;

beforeAll(async () => {
  server = await startFakeVllm({
    answer: (req) => (req.response_format ? judgeAnswer(req) : `REPORT FOR: ${req.messages.at(-1)?.content ?? ''}`),
  });
  dir = mkdtempSync(join(tmpdir(), 'gsteer-downstream-'));
  const instances = join(dir, 'instances.jsonl');
  writeFileSync(instances, INSTANCES.map((i) => `${JSON.stringify(i)}\n`).join(''));
  config = join(dir, 'c.yaml');
  writeFileSync(
    config,
    `runName: ds\nrunDir: ${dir}/runs\ndata:\n  instances: [${instances}]\neval:\n  bootstrap: {samples: 50}\n  downstream:\n` +
      `    agent: {kind: chat, name: Fake DR, baseUrl: ${server.baseUrl}, model: Qwen/Qwen3-32B, maxRetries: 0}\n` +
      `    judge: {kind: llm, baseUrl: ${server.baseUrl}, model: Qwen/Qwen3-32B, maxRetries: 0}\n`,
  );
  const ep = (id: string, group: 's1' | 'u1' | 't1' | 'b1', q: string | null) => ({
    ...episode(id, ({ s1: 'seen', u1: 'unseen_user', t1: 'unseen_task', b1: 'both_unseen' } as const)[group], [[1, true, true]], [true]),
    refinedQuery: q,
    termination: q === null ? ('invalid' as const) : ('stop' as const),
  });
  direct = join(dir, 'direct.json');
  gsteer = join(dir, 'gsteer.json');
  writeFileSync(
    direct,
    JSON.stringify(
      resultOf(
        ['s1', 'u1', 't1', 'b1'].map((id) => ep(id, id as 's1', `direct ${id}`)),
        'direct',
        'Direct Rewrite',
      ),
    ),
  );
  // G-STEER: two episodes of s1 (the second scores one more), no q* for u1 (the original's report is scored).
  writeFileSync(
    gsteer,
    JSON.stringify(
      resultOf(
        [ep('s1', 's1', 'gsteer s1 e0'), ep('s1', 's1', 'gsteer s1 e1'), ep('u1', 'u1', null), ep('t1', 't1', 'gsteer t1'), ep('b1', 'b1', 'gsteer b1')],
        'gsteer',
        'G-STEER',
      ),
    ),
  );
});

afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const quiet = async (argv: string[]) => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  const err = vi.spyOn(console, 'error').mockImplementation(() => {});
  const errWrite = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    return {
      rc: await runDownstreamCommand(argv),
      out: log.mock.calls.map((c) => c.join(' ')).join('\n'),
      err: err.mock.calls.map((c) => c.join(' ')).join('\n'),
    };
  } finally {
    log.mockRestore();
    err.mockRestore();
    errWrite.mockRestore();
  }
};

describe('gsteer eval downstream over HTTP', () => {
  let scores: DownstreamScores;
  const out = () => join(dir, 'scores.json');
  const view = (method: string, v: View) => downstreamView(scores, method, v, seededResampler(1, 20), 0.95);

  beforeAll(async () => {
    const r = await quiet([direct, gsteer, '--config', config, '--out', out()]);
    expect(r.rc).toBe(0);
    scores = DownstreamScoresSchema.parse(JSON.parse(readFileSync(out(), 'utf8')));
  });

  it('sends each distinct query once to the agent; plans each instance once; scores every report 3 rounds x (P, Q) with seeds 0..2', () => {
    const agentCalls = server.requests.filter((q) => !q.body.response_format);
    // orig x4, direct x4, gsteer s1 e0, s1 e1, t1, b1 (u1 has no q*: the original's report, shared)
    expect(agentCalls.map((q) => (q.body.messages as { content: string }[]).at(-1)?.content).sort()).toEqual([
      'direct b1',
      'direct s1',
      'direct t1',
      'direct u1',
      'gsteer b1',
      'gsteer s1 e0',
      'gsteer s1 e1',
      'gsteer t1',
      'orig b1',
      'orig s1',
      'orig t1',
      'orig u1',
    ]);
    const judgeCalls = server.requests.filter((q) => q.body.response_format);
    const named = (suffix: string) => judgeCalls.filter((q) => (q.body.response_format as { json_schema: { name: string } }).json_schema.name.endsWith(suffix));
    // the plan: per evaluated instance (4) P weights + 4 P criteria + Q weights + 3 Q criteria, once (shared by every method's report)
    expect(named('_weights').length + named('_criteria').length).toBe(4 * 9);
    expect(named('_weights').every((q) => q.body.seed === undefined)).toBe(true);
    // P's plan reads the persona, Q's does not
    expect(
      named('_criteria').every(
        (q) =>
          JSON.stringify(q.body.messages).includes('USER PERSONA') ===
          (q.body.response_format as { json_schema: { name: string } }).json_schema.name.startsWith('pqr_p'),
      ),
    ).toBe(true);
    // 13 scored reports, 12 distinct (G-STEER's u1 is the original's report: its scorer calls are cache hits) x 3 rounds x (P, Q)
    expect(named('_scores').length).toBe(12 * 3 * 2);
    expect(
      named('_scores')
        .map((q) => q.body.seed)
        .sort(),
    ).toEqual([...Array(24).fill(0), ...Array(24).fill(1), ...Array(24).fill(2)]);
    expect(scores.methods.map((m) => [m.name, m.original])).toEqual([
      ['Original Query', true],
      ['Direct Rewrite', false],
      ['G-STEER', false],
    ]);
    expect(scores.agent).toEqual({ name: 'Fake DR', model: 'Qwen/Qwen3-32B', standIn: false });
    expect(scores.judge).toEqual({ model: 'Qwen/Qwen3-32B', standIn: false, rounds: 3 });
  });

  it('keeps each round as the judge gave it', () => {
    const g = scores.scores.find((s) => s.method === 'G-STEER' && s.instanceId === 's1' && s.episode === 1);
    expect(g?.rounds.map((r) => r.p.overall)).toEqual([4, 5, 6]); // 3 + 0 + 1 + R
    const u = scores.scores.find((s) => s.method === 'G-STEER' && s.instanceId === 'u1');
    expect(u?.rounds.map((r) => r.p.overall)).toEqual([2, 3, 4]); // no q*: the original's report, 1 + 1 + R
  });

  it('averages rounds per report and reports per view as worked by hand', () => {
    // report P = B + I + episode + 1. Original: s1 2, u1 3, t1 4, b1 5. Direct: 3, 4, 5, 6.
    // G-STEER: s1 4 and 5, u1 3 (original's report), t1 6, b1 7.
    const P = (m: string, v: View) => view(m, v).est.p.value;
    expect([
      P('Original Query', 'overall'),
      P('Original Query', 'unseen_user_combined'),
      P('Original Query', 'unseen_task_combined'),
      P('Original Query', 'both_unseen'),
    ]).toEqual([3.5, 4, 4.5, 5]);
    expect([
      P('Direct Rewrite', 'overall'),
      P('Direct Rewrite', 'seen'),
      P('Direct Rewrite', 'unseen_user_combined'),
      P('Direct Rewrite', 'unseen_task_combined'),
    ]).toEqual([4.5, 3, 5, 5.5]);
    expect(P('G-STEER', 'overall')).toBeCloseTo(25 / 5, 12); // (4 + 5 + 3 + 6 + 7) / 5
    expect(P('G-STEER', 'seen')).toBeCloseTo(4.5, 12);
    expect(P('G-STEER', 'unseen_user_combined')).toBeCloseTo(5, 12); // (3 + 7) / 2
    expect(P('G-STEER', 'unseen_task_combined')).toBeCloseTo(6.5, 12); // (6 + 7) / 2
    expect(view('G-STEER', 'overall').reports).toBe(5);
    expect(view('G-STEER', 'overall').instances).toBe(4);
    // Q = 4 + I + 1: s1 5, u1 6, t1 7, b1 8. G-STEER overall (5 + 5 + 6 + 7 + 8) / 5.
    expect(view('G-STEER', 'overall').est.q.value).toBeCloseTo(31 / 5, 12);
    expect(view('Original Query', 'unseen_task_combined').est.q.value).toBeCloseTo(7.5, 12);
    // dimensions: goal = content = P, actionability = 2 R (mean 2), logic = Q - 1
    expect(view('Direct Rewrite', 'overall').est.content.value).toBeCloseTo(4.5, 12);
    expect(view('Direct Rewrite', 'overall').est.actionability.value).toBeCloseTo(2, 12);
    expect(view('Direct Rewrite', 'both_unseen').est.logic.value).toBeCloseTo(7, 12);
  });

  it('a second run sends nothing: reports come from the store, judge calls from the request cache', async () => {
    const before = server.requests.length;
    const r = await quiet([direct, gsteer, '--config', config, '--out', join(dir, 'again.json')]);
    expect(r.rc).toBe(0);
    expect(server.requests.length).toBe(before);
    expect(r.out).toContain('0 written by the agent, 13 read from');
    expect(JSON.parse(readFileSync(join(dir, 'again.json'), 'utf8'))).toEqual(JSON.parse(readFileSync(out(), 'utf8')));
  });

  it('--reports DIR scores reports produced elsewhere and names a missing one with its path', async () => {
    const ext = join(dir, 'ext');
    // the Original Query row and Direct Rewrite, from another system's reports
    mkdirSync(join(ext, 'original-query'), { recursive: true });
    mkdirSync(join(ext, 'direct-rewrite'), { recursive: true });
    for (const id of ['s1', 'u1', 't1', 'b1']) {
      writeFileSync(join(ext, 'original-query', `${id}.md`), `REPORT FOR: orig ${id}`);
      writeFileSync(join(ext, 'direct-rewrite', `${id}.e0.md`), `REPORT FOR: direct ${id}`);
    }
    const before = server.requests.filter((q) => !q.body.response_format).length;
    const r = await quiet([direct, '--config', config, '--reports', ext, '--out', join(dir, 'ext.json'), '--rounds', '1']);
    expect(r.rc).toBe(0);
    expect(server.requests.filter((q) => !q.body.response_format).length).toBe(before); // no agent call
    const s = DownstreamScoresSchema.parse(JSON.parse(readFileSync(join(dir, 'ext.json'), 'utf8')));
    expect(s.agent.model).toBeNull();
    // one round (seed 0, R = 0): Direct Rewrite P = 2 + I -> mean (2 + 3 + 4 + 5) / 4
    expect(downstreamView(s, 'Direct Rewrite', 'overall', seededResampler(1, 10), 0.95).est.p.value).toBe(3.5);
    await expect(runDownstreamCommand([gsteer, '--config', config, '--reports', ext])).rejects.toThrow(InputError);
    await expect(runDownstreamCommand([gsteer, '--config', config, '--reports', ext])).rejects.toThrow(
      /no report for method "G-STEER", instance "b1", episode 0; expected .*g-steer\/b1\.e0\.md/,
    );
  });
});

describe('the embedded stand-ins', () => {
  it('say so on the terminal, in the score file and in the tables', async () => {
    const r = await quiet([
      direct,
      '--config',
      config,
      '--set',
      'eval.downstream.agent.kind=embedded',
      '--set',
      'eval.downstream.judge.kind=embedded',
      '--out',
      join(dir, 'standin.json'),
    ]);
    expect(r.rc).toBe(0);
    expect(r.err).toMatch(/deep-research agent is the embedded stand-in.*not paper numbers/);
    expect(r.err).toMatch(/judge is the embedded stand-in/);
    expect(r.out).toMatch(/the deep-research agent and the judge is the embedded stand-in; these are not paper numbers/);
    const f = readResultFile(join(dir, 'standin.json'));
    expect(f.kind === 'downstream' && [f.scores.agent.standIn, f.scores.judge.standIn]).toEqual([true, true]);
  });

  const inst = {
    id: 'i',
    userId: 'u',
    taskId: 't',
    split: 'test',
    query: 'Which laptop should I buy?',
    profile: '',
    persona: [],
    edges: [],
    targets: [
      { id: 'a', description: 'budget under 1200 EUR', seedQuestion: '?', seedAnswer: '.', weight: 3, essential: true, lateActivatable: false },
      { id: 'b', description: 'long battery life for fieldwork', seedQuestion: '?', seedAnswer: '.', weight: 1, essential: false, lateActivatable: false },
    ],
  };
  it('the stand-in report addresses exactly what the query states, and the stand-in judge scores it through the same protocol by hand-countable rules', async () => {
    const judge = new PqrJudge(new StandInPqrSteps());
    const report = standInReport('Which laptop should I buy, with a budget under 1200 EUR?');
    const s = await judge.score(inst, report, 0);
    // criteria: goal {a}, content {a 3, b 1}, actionability {a 3, b 1}, presentation {headings}.
    // a's words (budget, under? no: "1200", "eur", "budget") all in the report and its list items: 10; b's none: 0.
    // goal 10, content (3 x 10 + 1 x 0) / 4 = 7.5, actionability 7.5, presentation: 3 sections with a body = 10.
    // weights: E = 3/4: goal 1.75, content 1.25, presentation 1, actionability 1 (sum 5).
    expect(s.p).toEqual({ goal: 10, content: 7.5, presentation: 10, actionability: 7.5, overall: (1.75 * 10 + 1.25 * 7.5 + 10 + 7.5) / 5 });
    expect(s.q.logic).toBe(10); // three sections (Scope, Findings, Recommendations) all with a body
    const plain = await judge.score(inst, 'Which laptop should I buy?', 1);
    expect(plain.p.goal).toBe(0);
    expect(plain.q.logic).toBe(5); // no headings
    expect(await judge.score(inst, report, 2)).toEqual(s); // every round the same
  });
});
