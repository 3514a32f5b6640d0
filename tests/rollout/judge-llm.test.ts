// The LLM memory judge against a scripted chat server: strict JSON, malformed = keep nothing.
import { describe, it, expect, afterEach } from 'vitest';
import { InstanceSchema } from '../../data/schema.ts';
import { LlmJudge, readJudgeReply, judgeMessages } from '../../rollout/judge-llm.ts';
import type { UserSnapshot } from '../../rollout/user-store.ts';
import { answer, covered, trajectory } from './helpers/trajectory.ts';
import { chatBody, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

const instance = InstanceSchema.parse({
  id: 'inst-1', userId: 'u1', taskId: 't', split: 'train', query: 'Which laptop?', profile: 'Ecologist.',
  targets: [{ id: 't', description: 'd', seedQuestion: 'q', seedAnswer: 'a', weight: 1 }],
});
const snapshot: UserSnapshot = { userId: 'u1', version: 1, profile: 'Uses Linux.', memories: [] };
const traj = trajectory(0, [covered('budget', 'spending limit', 'under 1200 EUR'), covered('os', 'operating system', 'Linux'), { name: 'gpu', purpose: 'gpu', status: 'uncovered', source: 'dialogue', value: '' }],
  [answer('Budget?', 'Under 1200 EUR.'), { kind: 'memory', query: 'os', results: [{ name: 'os', purpose: 'operating system', value: 'Linux', score: 0.9 }] }]);

let server: ScriptedServer | null = null;
afterEach(async () => { await server?.close(); server = null; });

describe('LlmJudge', () => {
  it('prompt shows profile, conversation and covered slots only', () => {
    const user = judgeMessages({ instance, trajectory: traj, snapshot })[1]!.content;
    expect(user).toBe([
      'REQUEST: Which laptop?', 'PROFILE: Ecologist. Uses Linux.', 'CONVERSATION:',
      '- assistant asked: Budget?', '  user: Under 1200 EUR.',
      '- memory search: os', '  memory: os (operating system): Linux',
      'COVERED SLOTS:', '- budget | purpose: spending limit | source: dialogue | value: under 1200 EUR', '- os | purpose: operating system | source: dialogue | value: Linux',
    ].join('\n'));
  });

  it('keeps what the judge names and takes its profile sentence', async () => {
    server = await startScriptedServer(() => ({ body: chatBody('```json\n{"keep": ["budget"], "profile_sentence": "Buys hardware on a tight budget."}\n```') }));
    const judge = new LlmJudge({ baseUrl: server.baseUrl, apiKeyEnv: 'X_NONE', timeoutMs: 5000, maxRetries: 0, model: 'judge', log: () => {} });
    const v = await judge.judge({ instance, trajectory: traj, snapshot });
    expect(v.verdicts.map((x) => x.reason)).toEqual(['kept', 'rejected', 'not_covered']);
    expect(v.profileSentence).toBe('Buys hardware on a tight budget.');
    expect(server.requests[0]!.body).toMatchObject({ model: 'judge', temperature: 0 });
  });

  it('malformed output keeps nothing and is logged', async () => {
    server = await startScriptedServer(() => ({ body: chatBody('Keep the budget slot.') }));
    const log: string[] = [];
    const judge = new LlmJudge({ baseUrl: server.baseUrl, apiKeyEnv: 'X_NONE', timeoutMs: 5000, maxRetries: 0, model: 'judge', log: (m) => log.push(m) });
    const v = await judge.judge({ instance, trajectory: traj, snapshot });
    expect(v).toEqual({ verdicts: traj.finalSlots.map((slot) => ({ slot, reason: slot.status === 'covered' ? 'judge_error' : 'not_covered' })), profileSentence: null });
    expect(log).toHaveLength(1);
    expect(log[0]).toContain('malformed reply for g1/0 (not JSON');
  });

  it('reads replies strictly', () => {
    const c = ['budget', 'os'];
    expect(readJudgeReply('{"keep": ["os", "os"], "profile_sentence": null}', c)).toEqual({ keep: ['os'], profileSentence: null });
    expect(readJudgeReply('{"keep": []}', c)).toEqual({ keep: [], profileSentence: null });
    expect(readJudgeReply('{"keep": ["gpu"]}', c)).toEqual({ error: '"keep" names ["gpu"], not covered slots' });
    expect(readJudgeReply('{"keep": "budget"}', c)).toEqual({ error: '"keep" must be a list of slot names' });
    expect(readJudgeReply('{"keep": [], "why": "x"}', c)).toEqual({ error: 'unknown key(s) why' });
    expect(readJudgeReply('{"keep": [], "profile_sentence": "One. Two."}', c)).toEqual({ error: '"profile_sentence" must be one sentence' });
    expect(readJudgeReply('[1]', c)).toEqual({ error: 'expected a JSON object, got an array' });
    expect(readJudgeReply('', c)).toEqual({ error: 'empty reply' });
  });
});
