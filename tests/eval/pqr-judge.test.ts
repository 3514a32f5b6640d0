// PDR-Bench's PQR judging protocol (eval/downstream/pqr.ts, judge.ts, judge-llm.ts; method §12)
// against a fake judge server: dimension weights and per-dimension criteria generated once per
// instance and metric, a separate scorer per round, hierarchical averaging, three rounds. The
// scores below are worked by hand from the fake's replies.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DownstreamJudgeSchema } from '../../configs/downstream.ts';
import { InstanceSchema } from '../../data/schema.ts';
import { judgeFrom } from '../../eval/downstream/judge.ts';
import { aggregate } from '../../eval/downstream/pqr.ts';
import { nullSink } from '../../endpoints/index.ts';
import { startFakeVllm, type FakeChatRequest, type FakeVllm } from '../helpers/fake-vllm.ts';

// Weights as a model writes them (they sum to 2 and to 1.6): divided by their sum.
const WEIGHTS = { p: { goal: 0.8, content: 0.6, presentation: 0.2, actionability: 0.4 }, q: { depth: 0.8, logic: 0.48, clarity: 0.32 } };
const CRITERIA: Record<string, { criterion: string; explanation: string; weight: number }[]> = {
  goal: [
    { criterion: 'serves the budget goal', explanation: 'x', weight: 0.75 },
    { criterion: 'serves the travel goal', explanation: 'y', weight: 0.25 },
  ],
  content: [{ criterion: 'content for a PhD student', explanation: '', weight: 1 }],
  presentation: [{ criterion: 'compact', explanation: '', weight: 1 }],
  actionability: [
    { criterion: 'shop links', explanation: '', weight: 0.5 },
    { criterion: 'price ranges', explanation: '', weight: 0.5 },
  ],
  depth: [
    { criterion: 'compares models', explanation: '', weight: 0.6 },
    { criterion: 'explains trade-offs', explanation: '', weight: 0.4 },
  ],
  logic: [{ criterion: 'argued', explanation: '', weight: 1 }],
  clarity: [{ criterion: 'readable', explanation: '', weight: 1 }],
};
// The scorer's integer scores per round (seed).
const SCORES: Record<number, Record<string, number>> = {
  0: {
    'goal.1': 8,
    'goal.2': 4,
    'content.1': 6,
    'presentation.1': 10,
    'actionability.1': 3,
    'actionability.2': 5,
    'depth.1': 5,
    'depth.2': 10,
    'logic.1': 8,
    'clarity.1': 9,
  },
  1: {
    'goal.1': 6,
    'goal.2': 6,
    'content.1': 8,
    'presentation.1': 9,
    'actionability.1': 5,
    'actionability.2': 5,
    'depth.1': 7,
    'depth.2': 7,
    'logic.1': 7,
    'clarity.1': 7,
  },
  2: {
    'goal.1': 7,
    'goal.2': 7,
    'content.1': 7,
    'presentation.1': 7,
    'actionability.1': 7,
    'actionability.2': 7,
    'depth.1': 7,
    'depth.2': 7,
    'logic.1': 7,
    'clarity.1': 7,
  },
};

let lastCriteriaDim = '';
function answer(req: FakeChatRequest): string {
  const name = req.response_format?.json_schema?.name ?? '';
  const system = req.messages[0]?.content ?? '';
  if (name === 'pqr_p_weights') return JSON.stringify({ rationale: 'budget first', weights: WEIGHTS.p });
  if (name === 'pqr_q_weights') return JSON.stringify({ rationale: 'depth first', weights: WEIGHTS.q });
  if (name.endsWith('_criteria')) {
    const d = Object.keys(CRITERIA).find((k) =>
      system.includes(
        `one dimension, ${({ goal: 'Goal Alignment', content: 'Content Alignment', presentation: 'Presentation Fit', actionability: 'Actionability', depth: 'Depth', logic: 'Logical', clarity: 'Clarity' } as Record<string, string>)[k]}`,
      ),
    )!;
    lastCriteriaDim = d;
    return JSON.stringify({ criteria: CRITERIA[d] });
  }
  const ids = [...(req.messages[1]?.content ?? '').matchAll(/^- ([a-z]+\.\d+): /gm)].map((m) => m[1] as string);
  return JSON.stringify({ scores: ids.map((id) => ({ id, analysis: 'ok', score: SCORES[req.seed as number]![id] })) });
}

let server: FakeVllm;
let cache: string;
beforeAll(async () => {
  server = await startFakeVllm({ answer });
  cache = mkdtempSync(join(tmpdir(), 'gsteer-pqr-'));
});
afterAll(async () => {
  await server.close();
  rmSync(cache, { recursive: true, force: true });
});

const inst = InstanceSchema.parse({
  id: 'i1',
  userId: 'u',
  taskId: 't',
  split: 'test',
  query: 'Which laptop should I buy?',
  profile: 'PhD student.',
  persona: ['flies to conferences'],
  targets: [{ id: 'a', description: 'budget', seedQuestion: '?', seedAnswer: '.', weight: 1 }],
});

describe('the PQR judge', () => {
  it('scores a report as worked by hand: weights normalized, criteria averaged per dimension, dimensions by weight, per round', async () => {
    const judge = judgeFrom(DownstreamJudgeSchema.parse({ kind: 'llm', baseUrl: server.baseUrl, model: 'Qwen/Qwen3-32B', maxRetries: 0 }), {
      sink: nullSink,
      cacheDir: cache,
    });
    const rounds = [0, 1, 2].map((k) => judge.score(inst, 'REPORT', k));
    const [r0, r1, r2] = await Promise.all(rounds);
    // P weights / 2: goal 0.4, content 0.3, presentation 0.1, actionability 0.2.
    // round 0: goal 0.75 x 8 + 0.25 x 4 = 7; content 6; presentation 10; actionability (3 + 5) / 2 = 4
    //          P = 0.4 x 7 + 0.3 x 6 + 0.1 x 10 + 0.2 x 4 = 2.8 + 1.8 + 1.0 + 0.8 = 6.4
    expect(r0!.p.goal).toBeCloseTo(7, 12);
    expect(r0!.p.actionability).toBeCloseTo(4, 12);
    expect(r0!.p.overall).toBeCloseTo(6.4, 12);
    // Q weights / 1.6: depth 0.5, logic 0.3, clarity 0.2; depth 0.6 x 5 + 0.4 x 10 = 7; Q = 3.5 + 2.4 + 1.8 = 7.7
    expect(r0!.q.depth).toBeCloseTo(7, 12);
    expect(r0!.q.overall).toBeCloseTo(7.7, 12);
    // round 1: goal 6, content 8, presentation 9, actionability 5: P = 2.4 + 2.4 + 0.9 + 1.0 = 6.7; round 2: all 7
    expect(r1!.p.overall).toBeCloseTo(6.7, 12);
    expect(r2!.p.overall).toBeCloseTo(7, 12);
    // the report's P (the mean of its three rounds, eval/downstream-scores.ts): (6.4 + 6.7 + 7) / 3 = 6.7
    expect((r0!.p.overall + r1!.p.overall + r2!.p.overall) / 3).toBeCloseTo(6.7, 12);
  });

  it('plans once per instance and metric: 2 weight calls, 7 criteria calls (one per dimension), then 2 scorer calls per round', () => {
    const names = server.requests.map((q) => (q.body.response_format as { json_schema: { name: string } }).json_schema.name);
    expect(names.filter((n) => n.endsWith('_weights')).sort()).toEqual(['pqr_p_weights', 'pqr_q_weights']);
    expect(names.filter((n) => n.endsWith('_criteria')).length).toBe(7);
    expect(names.filter((n) => n.endsWith('_scores')).length).toBe(6);
    expect(lastCriteriaDim).not.toBe('');
    // P's requests carry the persona, Q's the task alone
    for (const q of server.requests) {
      const text = JSON.stringify(q.body.messages);
      const name = (q.body.response_format as { json_schema: { name: string } }).json_schema.name;
      expect(text.includes('USER PERSONA:\\nPhD student.\\nflies to conferences'), name).toBe(name.startsWith('pqr_p'));
    }
  });

  it('aggregate is the hierarchical weighted mean (a dimension without criteria scores 0)', () => {
    const plan = {
      metric: 'q' as const,
      weights: { depth: 2, logic: 1, clarity: 1 },
      criteria: {
        depth: [
          { id: 'depth.1', text: 'x', weight: 3 },
          { id: 'depth.2', text: 'y', weight: 1 },
        ],
        logic: [{ id: 'logic.1', text: 'z', weight: 1 }],
        clarity: [],
      },
    };
    // depth (3 x 4 + 1 x 8) / 4 = 5; logic 6; clarity 0; Q = (2 x 5 + 6 + 0) / 4 = 4
    expect(
      aggregate(
        plan,
        new Map([
          ['depth.1', 4],
          ['depth.2', 8],
          ['logic.1', 6],
        ]),
      ),
    ).toEqual({ depth: 5, logic: 6, clarity: 0, overall: 4 });
  });
});
