// The LLM memory judge against a scripted chat server: strict JSON, malformed = keep nothing.
import { describe, it, expect, afterEach } from 'vitest';
import { InstanceSchema } from '../../data/schema.ts';
import { createEndpoint } from '../../endpoints/index.ts';
import { LlmJudge, judgeReplySchema, judgeMessages } from '../../rollout/judge-llm.ts';
import { options, recordingDeps } from '../endpoints/helpers.ts';
import type { UserSnapshot } from '../../rollout/user-store.ts';
import { answer, covered, trajectory } from './helpers/trajectory.ts';
import { chatBody, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

const instance = InstanceSchema.parse({
  id: 'inst-1',
  userId: 'u1',
  taskId: 't',
  split: 'train',
  query: 'Which laptop?',
  profile: 'Ecologist.',
  targets: [{ id: 't', description: 'd', seedQuestion: 'q', seedAnswer: 'a', weight: 1 }],
});
const snapshot: UserSnapshot = { userId: 'u1', version: 1, profile: 'Uses Linux.', memories: [] };
const traj = trajectory(
  0,
  [
    covered('budget', 'spending limit', 'under 1200 EUR'),
    covered('os', 'operating system', 'Linux'),
    { name: 'gpu', purpose: 'gpu', status: 'uncovered', source: 'dialogue', value: '' },
  ],
  [answer('Budget?', 'Under 1200 EUR.'), { kind: 'memory', query: 'os', results: [{ name: 'os', purpose: 'operating system', value: 'Linux', score: 0.9 }] }],
);

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

describe('LlmJudge', () => {
  it('prompt shows profile, conversation and covered slots only', () => {
    const user = judgeMessages({ instance, trajectory: traj, snapshot })[1]!.content;
    expect(user).toBe(
      [
        'REQUEST: Which laptop?',
        'PROFILE: Ecologist. Uses Linux.',
        'CONVERSATION:',
        '- assistant asked: Budget?',
        '  user: Under 1200 EUR.',
        '- memory search: os',
        '  memory: os (operating system): Linux',
        'COVERED SLOTS:',
        '- budget | purpose: spending limit | source: dialogue | value: under 1200 EUR',
        '- os | purpose: operating system | source: dialogue | value: Linux',
      ].join('\n'),
    );
  });

  it('keeps what the judge names and takes its profile sentence', async () => {
    server = await startScriptedServer(() => ({
      body: chatBody('```json\n{"keep": ["budget"], "profile_sentence": "Buys hardware on a tight budget."}\n```'),
    }));
    const judge = new LlmJudge({
      endpoint: createEndpoint(options(server.baseUrl, { role: 'judge', model: 'judge', maxRetries: 0 })),
      temperature: 0,
      maxTokens: 768,
      log: () => {},
    });
    const v = await judge.judge({ instance, trajectory: traj, snapshot });
    expect(v.verdicts.map((x) => x.reason)).toEqual(['kept', 'rejected', 'not_covered']);
    expect(v.profileSentence).toBe('Buys hardware on a tight budget.');
    expect(server.requests[0]!.body).toMatchObject({ model: 'judge', temperature: 0 });
  });

  it('a reply refused on every attempt keeps nothing and is logged', async () => {
    server = await startScriptedServer(() => ({ body: chatBody('Keep the budget slot.') }));
    const log: string[] = [];
    const judge = new LlmJudge({
      endpoint: createEndpoint(options(server.baseUrl, { role: 'judge', model: 'judge', maxRetries: 1 }), recordingDeps()),
      temperature: 0,
      maxTokens: 768,
      log: (m) => log.push(m),
    });
    const v = await judge.judge({ instance, trajectory: traj, snapshot });
    expect(v).toEqual({
      verdicts: traj.finalSlots.map((slot) => ({ slot, reason: slot.status === 'covered' ? 'judge_error' : 'not_covered' })),
      profileSentence: null,
    });
    expect(log).toHaveLength(1);
    expect(log[0]).toContain('no acceptable reply for g1/0');
    expect(log[0]).toContain('not_json');
    expect(server.requests).toHaveLength(2); // refused, retried once, refused again
  });

  it('reads replies strictly', () => {
    const schema = judgeReplySchema(['budget', 'os']);
    expect(schema.parse({ keep: ['os', 'os'], profile_sentence: null })).toEqual({ keep: ['os'], profileSentence: null });
    expect(schema.parse({ keep: [], profile_sentence: ' Likes R. ' })).toEqual({ keep: [], profileSentence: 'Likes R.' });
    expect(schema.safeParse({ keep: ['gpu'], profile_sentence: null }).success).toBe(false); // not a covered slot
    expect(schema.safeParse({ keep: 'budget', profile_sentence: null }).success).toBe(false);
    expect(schema.safeParse({ keep: [], profile_sentence: null, why: 'x' }).success).toBe(false);
    expect(schema.safeParse({ keep: [], profile_sentence: 'One. Two.' }).success).toBe(false);
    expect(schema.safeParse([1]).success).toBe(false);
    expect(judgeReplySchema([]).safeParse({ keep: ['budget'], profile_sentence: null }).success).toBe(false);
  });
});
