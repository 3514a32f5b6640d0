// A fake of OpenAI's Chat Completions API as it treats a reasoning model (gpt-5.4, o3, ...), for
// tests of what gsteer sends (method §14.6): a 400 invalid_request_error, worded as OpenAI words
// it, for a temperature or top_p other than the default 1, for `max_tokens` (reasoning models
// take `max_completion_tokens`), and for any body field the API does not know
// (chat_template_kwargs is vLLM's). Otherwise a 200 whose content is `answer(body)`.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeOpenAi {
  baseUrl: string;
  /** Every request body, in arrival order, with the status it got. */
  requests: { body: Record<string, unknown>; status: number }[];
  close(): Promise<void>;
}

/** Chat Completions body fields the API knows (others: "Unrecognized request argument supplied"). */
const KNOWN = new Set([
  'model',
  'messages',
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'seed',
  'stop',
  'response_format',
  'n',
  'frequency_penalty',
  'presence_penalty',
  'logprobs',
  'top_logprobs',
  'reasoning_effort',
  'stream',
  'tools',
  'tool_choice',
  'user',
  'metadata',
  'store',
]);

/** The 400 body of one refused field, or null when the body is accepted. */
function refusal(body: Record<string, unknown>): { message: string; param: string; code: string } | null {
  for (const k of Object.keys(body)) if (!KNOWN.has(k)) return { message: `Unrecognized request argument supplied: ${k}`, param: k, code: 'unknown_parameter' };
  if ('max_tokens' in body)
    return {
      message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      param: 'max_tokens',
      code: 'unsupported_parameter',
    };
  for (const k of ['temperature', 'top_p'])
    if (k in body && body[k] !== 1)
      return {
        message: `Unsupported value: '${k}' does not support ${String(body[k])} with this model. Only the default (1) value is supported.`,
        param: k,
        code: 'unsupported_value',
      };
  return null;
}

export async function startFakeOpenAi(answer: (body: Record<string, unknown>) => string): Promise<FakeOpenAi> {
  const requests: FakeOpenAi['requests'] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      const bad = refusal(body);
      const status = bad ? 400 : 200;
      requests.push({ body, status });
      res.writeHead(status, { 'content-type': 'application/json' });
      if (bad) return void res.end(JSON.stringify({ error: { ...bad, type: 'invalid_request_error' } }));
      const content = answer(body);
      res.end(
        JSON.stringify({
          id: 'chatcmpl-fake',
          object: 'chat.completion',
          created: 0,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, completion_tokens_details: { reasoning_tokens: 3 } },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, requests, close: () => new Promise((r) => server.close(() => r())) };
}
