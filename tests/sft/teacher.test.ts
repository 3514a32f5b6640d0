// The LLM teacher over real HTTP (a local OpenAI-compatible endpoint on 127.0.0.1): what it
// sends (model, the evidence of covered slots only, the API key from the named env var)
// and how it reads the reply (think block dropped, one line).
import { describe, it, expect, afterAll, beforeAll } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { llmTeacher } from '../../data/sft/teacher.ts';
import { createEndpoint, ReplyError } from '../../endpoints/index.ts';
import { options, recordingDeps } from '../endpoints/helpers.ts';

let server: Server;
let url: string;
const seen: { auth: string | undefined; body: { model: string; messages: { role: string; content: string }[] } }[] = [];
let reply = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      seen.push({ auth: req.headers.authorization, body: JSON.parse(data) });
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 0,
          model: 'm',
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: reply } }],
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const input = {
  query: 'Plan a family trip.',
  profile: 'Nurse in Ohio.',
  slots: [
    { name: 'budget', purpose: 'trip budget', status: 'covered' as const, value: '$3,000 total', source: 'dialogue' as const },
    { name: 'dates', purpose: 'travel dates', status: 'uncovered' as const, value: '', source: 'memory' as const },
  ],
};

describe('llmTeacher', () => {
  it('sends the query, profile and covered evidence with the key from the env var, and returns q* on one line', async () => {
    process.env.GSTEER_TEST_TEACHER_KEY = 'sk-test-123';
    reply = '<think>\nthe user wants...\n</think>\n\nPlan a one-week family trip\nwithin a $3,000 total budget.';
    const t = llmTeacher({ endpoint: createEndpoint(options(url, { role: 'teacher', apiKeyEnv: 'GSTEER_TEST_TEACHER_KEY', maxRetries: 0 })), maxTokens: 768 });
    expect(await t.refine(input)).toBe('Plan a one-week family trip within a $3,000 total budget.');
    const req = seen.at(-1)!;
    expect(req.auth).toBe('Bearer sk-test-123');
    expect(req.body.model).toBe('Qwen/Qwen3-32B');
    const user = req.body.messages.find((m) => m.role === 'user')!.content;
    expect(user).toContain('Original request: Plan a family trip.');
    expect(user).toContain('- budget (trip budget): $3,000 total [dialogue]');
    expect(user).not.toContain('dates');
  });

  it('an empty reply is refused, retried, then a ReplyError naming the model', async () => {
    reply = '<think>hmm</think>   ';
    const before = seen.length;
    const t = llmTeacher({ endpoint: createEndpoint(options(url, { role: 'teacher', model: 'teacher-x', maxRetries: 1 }), recordingDeps()), maxTokens: 768 });
    const e = await t.refine(input).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ReplyError);
    expect((e as ReplyError).kind).toBe('empty');
    expect((e as Error).message).toMatch(/teacher-x/);
    expect(seen.length - before).toBe(2);
  });
});
