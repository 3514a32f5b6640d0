// The `responses` deep-research agent (eval/downstream/agent.ts) against a real HTTP server
// speaking the OpenAI Responses API: the request carries the model, the query, the web-search
// tool and max_tool_calls; the report is the messages' output_text (tool calls skipped); a 429
// is retried under the endpoint rule and every attempt is a call record; an empty output is a
// refused reply, never an empty report.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DownstreamAgentSchema } from '../../configs/downstream.ts';
import { agentFrom } from '../../eval/downstream/agent.ts';
import type { CallRecord } from '../../endpoints/index.ts';

let server: Server;
let baseUrl: string;
const bodies: Record<string, unknown>[] = [];
let n = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      n++;
      const body = JSON.parse(raw) as Record<string, unknown>;
      bodies.push(body);
      if (req.url !== '/v1/responses') return void res.writeHead(404).end();
      if (n === 1)
        return void res
          .writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' })
          .end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }));
      const text = body.input === 'empty please' ? [] : [{ type: 'output_text', text: `Report on: ${String(body.input)}`, annotations: [] }];
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `resp_${n}`,
          object: 'response',
          status: 'completed',
          model: body.model,
          created_at: 0,
          output: [
            { type: 'web_search_call', id: 'ws_1', status: 'completed' },
            ...(text.length ? [{ type: 'message', id: 'm_1', role: 'assistant', status: 'completed', content: text }] : []),
          ],
          usage: { input_tokens: 12, output_tokens: 34, total_tokens: 46 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('responses agent', () => {
  it('sends the query with the web-search tool and max_tool_calls, retries a 429, reads output_text', async () => {
    const records: CallRecord[] = [];
    const c = DownstreamAgentSchema.parse({ kind: 'responses', baseUrl, maxRetries: 2 });
    const agent = agentFrom(c, { sink: { record: (r) => records.push(r) }, cacheDir: '/nonexistent' });
    expect(await agent.research('Which laptop, under 1200 EUR?')).toBe('Report on: Which laptop, under 1200 EUR?');
    expect(bodies.at(-1)).toEqual({
      model: 'o4-mini-deep-research-2025-06-26',
      input: 'Which laptop, under 1200 EUR?',
      tools: [{ type: 'web_search_preview' }],
      max_tool_calls: 15,
    });
    expect(records.map((r) => [r.role, r.status, r.promptTokens, r.completionTokens])).toEqual([
      ['agent', 'http_429', null, null],
      ['agent', 'ok', 12, 34],
    ]);
    expect([agent.standIn, agent.model]).toEqual([false, 'o4-mini-deep-research-2025-06-26']);
  });

  it('an output without text is refused (retried, then a ReplyError), not an empty report', async () => {
    const c = DownstreamAgentSchema.parse({ kind: 'responses', baseUrl, maxRetries: 1, tool: null, maxOutputTokens: 4000 });
    const agent = agentFrom(c, { sink: { record: () => {} }, cacheDir: '/nonexistent' });
    await expect(agent.research('empty please')).rejects.toThrow(/empty/);
    expect(bodies.at(-1)).toEqual({ model: 'o4-mini-deep-research-2025-06-26', input: 'empty please', max_output_tokens: 4000 });
  });
});
