// A small node:http server that speaks the policy wire protocol (vLLM /v1/completions) and
// replays scripted replies, for the policy-client and episode tests. Records every request.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IM_END_ID, qwen3Tokenizer } from '../../../core/tokenizer.ts';

export interface ScriptedReply {
  status?: number; // default 200
  body?: unknown; // sent as JSON
  destroy?: boolean; // drop the connection without answering
  delayMs?: number;
}

export type Handler = (req: Record<string, unknown>, n: number) => ScriptedReply;

export interface ScriptedServer {
  baseUrl: string; // ends in /v1
  requests: { path: string; auth: string | undefined; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

export async function startScriptedServer(handler: Handler): Promise<ScriptedServer> {
  const requests: ScriptedServer['requests'] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
      requests.push({ path: req.url ?? '', auth: req.headers.authorization, body });
      const reply = handler(body, requests.length - 1);
      const send = () => {
        if (reply.destroy) return void req.socket.destroy();
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(reply.body ?? {}));
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A vLLM-shaped /v1/completions body for `text` tokenized by the real Qwen3 tokenizer. */
export function completionBody(
  text: string,
  opts: { promptIds?: number[]; finish?: 'stop' | 'length'; logprob?: (i: number) => number; idsIn?: 'token_ids' | 'tokens' } = {},
) {
  const tok = qwen3Tokenizer();
  const finish = opts.finish ?? 'stop';
  const ids = [...tok.encode(text), ...(finish === 'stop' ? [IM_END_ID] : [])];
  const lps = ids.map((_, i) => opts.logprob?.(i) ?? -0.01 * (i + 1));
  const idsIn = opts.idsIn ?? 'token_ids';
  return {
    id: 'cmpl-test',
    object: 'text_completion',
    created: 1,
    model: 'policy',
    choices: [
      {
        index: 0,
        text,
        finish_reason: finish,
        logprobs: { tokens: ids.map((id) => `token_id:${id}`), token_logprobs: lps, top_logprobs: null, text_offset: ids.map(() => 0) },
        ...(idsIn === 'token_ids' ? { token_ids: ids } : {}),
        ...(opts.promptIds ? { prompt_token_ids: opts.promptIds } : {}),
      },
    ],
    usage: { prompt_tokens: opts.promptIds?.length ?? 0, completion_tokens: ids.length, total_tokens: ids.length },
  };
}

/** A /v1/chat/completions body with one assistant message (for simulator and judge tests). */
export function chatBody(content: string) {
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}
