// The policy client against a real HTTP server speaking the vLLM /v1/completions protocol.
import { describe, it, expect, afterEach } from 'vitest';
import { OpenAIPolicyClient, readChoice } from '../../rollout/policy-client.ts';
import { backoffMs } from '../../endpoints/index.ts';
import { InputError, TransientError } from '../../util/errors.ts';
import { IM_END_ID, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { completionBody, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { POLICY_CONSTRAINT, turnConstraint } from '../../rollout/policy-constraint.ts';
import { specHash } from '../../structured/constraint-spec.ts';

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

const PROMPT = [151644, 872, 198, 9707, 151645, 198];
const req = { promptIds: PROMPT, maxTokens: 32, temperature: 0.7, topP: 0.95, seed: 1234, model: 'policy-v3' };
const client = (baseUrl: string, extra: Partial<{ maxRetries: number; timeoutMs: number }> = {}) =>
  new OpenAIPolicyClient({
    baseUrl,
    apiKeyEnv: 'GSTEER_TEST_POLICY_KEY',
    timeoutMs: extra.timeoutMs ?? 5000,
    maxRetries: extra.maxRetries ?? 2,
    retryBaseMs: 5,
  });

describe('OpenAIPolicyClient', () => {
  it('sends the vLLM request and returns the server ids and logprobs (EOS included)', async () => {
    process.env.GSTEER_TEST_POLICY_KEY = 'sk-test-123';
    server = await startScriptedServer(() => ({ body: completionBody('ACTION: STOP', { promptIds: PROMPT }) }));
    const out = await client(server.baseUrl).complete(req);
    const ids = [...qwen3Tokenizer().encode('ACTION: STOP'), IM_END_ID];
    expect(out).toEqual({ completionIds: ids, logprobs: ids.map((_, i) => -0.01 * (i + 1)), text: 'ACTION: STOP', finishReason: 'stop' });
    expect(server.requests).toHaveLength(1);
    const r = server.requests[0]!;
    expect(r.path).toBe('/v1/completions');
    expect(r.auth).toBe('Bearer sk-test-123');
    expect(r.body).toMatchObject({
      model: 'policy-v3',
      prompt: PROMPT,
      max_tokens: 32,
      temperature: 0.7,
      top_p: 0.95,
      seed: 1234,
      n: 1,
      logprobs: 1,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
    });
    delete process.env.GSTEER_TEST_POLICY_KEY;
  });

  it("reads usage.prompt_tokens_details.cached_tokens when the server sends it (OpenAI's field; gsteer serve, vLLM with details on)", async () => {
    const usage = (details: unknown) => ({
      prompt_tokens: PROMPT.length,
      completion_tokens: 4,
      total_tokens: PROMPT.length + 4,
      prompt_tokens_details: details,
    });
    for (const [details, want] of [
      [{ cached_tokens: 4 }, 4],
      [null, undefined],
      [{ cached_tokens: 'x' }, undefined],
      [{ cached_tokens: 99 }, undefined],
    ] as const) {
      server = await startScriptedServer(() => ({ body: { ...completionBody('ACTION: STOP', { promptIds: PROMPT }), usage: usage(details) } }));
      expect((await client(server.baseUrl).complete(req)).cachedPromptTokens).toBe(want);
      await server.close();
      server = null;
    }
  });

  it('sends the policy grammar as vLLM structured_outputs.grammar (and the gsteer token filter) for a constrained call', async () => {
    server = await startScriptedServer(() => ({ body: completionBody('ACTION: STOP', { promptIds: PROMPT }) }));
    const out = await client(server.baseUrl).complete({ ...req, constraint: POLICY_CONSTRAINT });
    const body = server.requests[0]!.body;
    // vLLM >= 0.10.2 reads structured_outputs.grammar (xgrammar EBNF) and ignores gsteer_token_filter
    expect(body.structured_outputs).toEqual({ grammar: POLICY_GRAMMAR });
    expect(POLICY_GRAMMAR).toBe(readFileSync(join(import.meta.dirname, '../../structured/turn/grammar.ebnf'), 'utf8'));
    expect(body.gsteer_token_filter).toBe('policy_turn');
    expect(body).not.toHaveProperty('guided_grammar'); // removed in vLLM 0.12
    // a vLLM response says nothing about what it applied: the turn records the grammar alone
    expect(out.applied).toBeUndefined();
    expect(turnConstraint(out.applied, 32)).toEqual({
      tokenFilter: null,
      tokenFilterVersion: null,
      specSha256: specHash({ type: 'grammar', grammar: POLICY_GRAMMAR }),
      maxTokens: 32,
      reported: false,
    });
    await client(server.baseUrl).complete(req);
    expect(server.requests[1]!.body).not.toHaveProperty('structured_outputs'); // unconstrained calls send none
  });

  it('reads what gsteer serve reports applying, and a grammar dead end', async () => {
    const applied = { type: 'grammar', spec_sha256: 'ab'.repeat(32), token_filter: 'policy_turn', token_filter_version: 1, max_tokens: 32, vocab: 'v' };
    server = await startScriptedServer((_, n) => {
      const body = completionBody('STATE:', { promptIds: PROMPT });
      if (n === 1) Object.assign(body.choices[0]!, { finish_reason: 'abort', stop_reason: 'grammar_dead_end' });
      return { body: { ...body, gsteer_structured_outputs: applied } };
    });
    const out = await client(server.baseUrl).complete({ ...req, constraint: POLICY_CONSTRAINT });
    expect(out.applied).toEqual({ specSha256: 'ab'.repeat(32), tokenFilter: 'policy_turn', tokenFilterVersion: 1, maxTokens: 32 });
    expect(turnConstraint(out.applied, 32)).toEqual({
      tokenFilter: 'policy_turn',
      tokenFilterVersion: 1,
      specSha256: 'ab'.repeat(32),
      maxTokens: 32,
      reported: true,
    });
    expect((await client(server.baseUrl).complete({ ...req, constraint: POLICY_CONSTRAINT })).finishReason).toBe('abort');
  });

  it('falls back to token_id:N strings when token_ids is absent, and reports length truncation', async () => {
    server = await startScriptedServer(() => ({ body: completionBody('STATE:\n- a', { finish: 'length', idsIn: 'tokens' }) }));
    const out = await client(server.baseUrl).complete(req);
    expect(out.finishReason).toBe('length');
    expect(out.completionIds).toEqual(qwen3Tokenizer().encode('STATE:\n- a'));
    expect(server.requests[0]?.auth).toBe('Bearer EMPTY'); // no key in env: vLLM's placeholder
  });

  it('fails loudly when the server saw different prompt ids', async () => {
    server = await startScriptedServer(() => ({ body: completionBody('x', { promptIds: [...PROMPT.slice(0, 3), 1, ...PROMPT.slice(4)] }) }));
    const e = await client(server.baseUrl)
      .complete(req)
      .catch((x) => x);
    expect(e).toBeInstanceOf(InputError);
    expect(e.message).toContain('differ from ours at position 3 (server 1, ours 9707');
    expect(e.message).toContain(`${server.baseUrl}/completions`);
  });

  it('retries 5xx with backoff, then succeeds', async () => {
    server = await startScriptedServer((_b, n) =>
      n < 2 ? { status: 503, body: { error: { message: 'loading', type: 'server_error', param: null, code: 503 } } } : { body: completionBody('ok') },
    );
    const out = await client(server.baseUrl, { maxRetries: 2 }).complete(req);
    expect(out.text).toBe('ok');
    expect(server.requests).toHaveLength(3);
  });

  it('never retries a 4xx and names the URL', async () => {
    server = await startScriptedServer(() => ({
      status: 404,
      body: { error: { message: 'The model `policy-v3` does not exist.', type: 'NotFoundError', param: 'model', code: 404 } },
    }));
    const e = await client(server.baseUrl, { maxRetries: 3 })
      .complete(req)
      .catch((x) => x);
    expect(server.requests).toHaveLength(1);
    expect(e).toBeInstanceOf(InputError);
    expect(e.message).toContain(`policy endpoint ${server.baseUrl}/completions (model policy) rejected the request with HTTP 404`);
  });

  it('gives up after maxRetries on dropped connections and timeouts, naming the URL', async () => {
    server = await startScriptedServer((_b, n) => (n % 2 ? { destroy: true } : { delayMs: 400, body: completionBody('late') }));
    const e = await client(server.baseUrl, { maxRetries: 2, timeoutMs: 150 })
      .complete(req)
      .catch((x) => x);
    expect(e).toBeInstanceOf(TransientError);
    expect(e.message).toContain(`policy endpoint ${server.baseUrl}/completions (model policy) failed after 3 attempt(s)`);
    expect(server.requests).toHaveLength(3);
  });

  it('rejects malformed responses with the field named', () => {
    const url = 'http://x/v1/completions';
    const good = completionBody('hi').choices[0]!;
    expect(() => readChoice({ ...good, finish_reason: 'abort' }, [], url)).toThrow(/finish_reason is "abort"/);
    expect(() => readChoice({ ...good, token_ids: [1, 2, 3] }, [], url)).toThrow(/has 3 ids but 2 logprobs/);
    expect(() => readChoice({ ...good, logprobs: null }, [], url)).toThrow(/token_logprobs is missing/);
    expect(() => readChoice({ ...good, logprobs: { ...good.logprobs, token_logprobs: good.logprobs.token_logprobs.map(() => 0.5) } }, [], url)).toThrow(
      /finite logprob <= 0/,
    );
    expect(() => readChoice(undefined, [], url)).toThrow(/choices\[0\] is missing/);
  });

  it('backoff doubles and is capped', () => {
    expect([0, 1, 2, 3, 4, 5].map((k) => backoffMs(k, { baseDelayMs: 500, maxDelayMs: 8000, maxRetryAfterMs: 60_000 }))).toEqual([
      500, 1000, 2000, 4000, 8000, 8000,
    ]);
  });
});
