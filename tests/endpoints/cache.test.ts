// The request-hash cache: a re-run makes zero server calls and records its hits as cached;
// the API key is not part of the hash, the request is; failures are not stored; a SIGKILL
// mid-run leaves only whole entries, and the re-run asks exactly what was not stored.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { requestKey, withRequestCache } from '../../endpoints/cache.ts';
import { createEndpoint } from '../../endpoints/endpoint.ts';
import { ReplyError } from '../../endpoints/errors.ts';
import { startFakeVllm, type FakeChatRequest, type FakeVllm } from '../helpers/fake-vllm.ts';
import { options, recordingDeps, statuses } from './helpers.ts';

let server: FakeVllm | null = null;
const dirs: string[] = [];
afterEach(async () => {
  await server?.close();
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
  delete process.env.GSTEER_TEST_KEY_A;
});
const tempDir = () => (dirs.push(mkdtempSync(join(tmpdir(), 'gsteer-llm-cache-'))), dirs.at(-1)!);
const lastUser = (r: FakeChatRequest) => r.messages.at(-1)!.content;
const spec = { name: 'a', schema: z.object({ answer: z.string() }) };
const q = (text: string, temperature = 0) => ({ messages: [{ role: 'user' as const, content: text }], temperature });
const entries = (dir: string) => readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.json'));

describe('request-hash cache', () => {
  it('a re-run (another API key) sends nothing and records every call as cached', async () => {
    server = await startFakeVllm({ answer: (r) => JSON.stringify({ answer: `A:${lastUser(r)}` }) });
    const dir = tempDir();
    const run = async (apiKeyEnv: string) => {
      const deps = recordingDeps();
      const ep = withRequestCache(createEndpoint(options(server!.baseUrl, { apiKeyEnv }), deps), dir);
      const out = [await ep.chatJson(q('one'), spec), await ep.chatJson(q('two'), spec), await ep.chat(q('three')), await ep.embed(['x y', 'z'])];
      return { out, records: deps.records };
    };
    process.env.GSTEER_TEST_KEY_A = 'key-a';
    const first = await run('GSTEER_TEST_KEY_A');
    expect(server.requests.length).toBe(4);
    expect(entries(dir)).toHaveLength(4);
    const second = await run('GSTEER_TEST_KEY_B_UNSET');
    expect(server.requests.length).toBe(4);
    expect(second.out).toEqual(first.out);
    expect(statuses(second.records)).toEqual(['cached', 'cached', 'cached', 'cached']);
    expect((first.out[0] as unknown as { value: unknown }).value).toEqual({ answer: 'A:one' });
    expect(readFileSync(join(dir, entries(dir)[0]!), 'utf8')).not.toContain('key-a');
  });

  it('the hash covers model, messages, sampling and schema', () => {
    const base = { kind: 'chat', body: { model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 0 } };
    const k = requestKey(base);
    expect(requestKey({ body: { temperature: 0, messages: [{ content: 'x', role: 'user' }], model: 'm' }, kind: 'chat' })).toBe(k); // key order does not matter
    expect(requestKey({ ...base, body: { ...base.body, temperature: 0.7 } })).not.toBe(k);
    expect(requestKey({ ...base, body: { ...base.body, model: 'n' } })).not.toBe(k);
    expect(requestKey({ ...base, schema: { type: 'object' } })).not.toBe(k);
    expect(k).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a failed call stores nothing; identical calls in flight share one request', async () => {
    server = await startFakeVllm({ answer: () => 'not json' });
    const dir = tempDir();
    const deps = recordingDeps();
    const ep = withRequestCache(createEndpoint(options(server.baseUrl, { maxRetries: 0 }), deps), dir);
    await expect(ep.chatJson(q('x'), spec)).rejects.toThrow(ReplyError);
    expect(entries(dir)).toEqual([]);
    const same = await Promise.all([ep.chat(q('y')), ep.chat(q('y')), ep.chat(q('y'))]);
    expect(same.map((r) => r.text)).toEqual(['not json', 'not json', 'not json']);
    expect(server.requests.length).toBe(2);
    expect(statuses(deps.records)).toEqual(['reply_error:not_json', 'ok', 'cached', 'cached']);
  });

  it('a SIGKILL mid-run leaves whole entries only; the re-run asks only what was not stored', async () => {
    const N = 40;
    server = await startFakeVllm({ answer: (r) => JSON.stringify({ answer: `A:${lastUser(r)}` }), delayMs: 20 });
    const dir = tempDir();
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'cache-child.ts'), server.baseUrl, dir, String(N)], {
      stdio: 'ignore',
    });
    const exited = new Promise((r) => child.on('exit', r));
    while (entries(dir).length < 5) await new Promise((r) => setTimeout(r, 10)); // bounded by the test timeout
    child.kill('SIGKILL');
    await exited;
    const stored = entries(dir);
    expect(stored.length).toBeLessThan(N);
    for (const f of stored) expect(() => JSON.parse(readFileSync(join(dir, f), 'utf8'))).not.toThrow();
    const before = server.requests.length;
    const ep = withRequestCache(createEndpoint(options(server.baseUrl, { role: 'builder', maxRetries: 2, concurrency: 1 }), recordingDeps()), dir);
    for (let i = 0; i < N; i++) expect((await ep.chatJson({ messages: [{ role: 'user', content: `q${i}` }] }, spec)).value).toEqual({ answer: `A:q${i}` });
    expect(server.requests.length - before).toBe(N - stored.length);
  }, 60_000);
});
