// A test server that behaves like vLLM serving Qwen3: a real node:http server on 127.0.0.1
// (port 0) answering POST /v1/chat/completions, GET /v1/models and POST /v1/embeddings, for
// the endpoint tests, the simulator canary test, the data builder and downstream eval.
//
// Options (all optional; every behaviour is deterministic for a given seed):
//   model              served model id (default "Qwen/Qwen3-32B"); another model -> 404 like vLLM
//   seed               seeds the `rate` draws of every Fault (fake-vllm-faults.ts; default 0)
//   answer(req, n)     the reply content for request n (default a non-committal sentence)
//   thinking(req)      the <think> text; default quotes the whole system prompt, as models do.
//                      Sent unless chat_template_kwargs.enable_thinking === false
//   reasoningParser    'reasoning_content' | 'reasoning': thinking moves to that message field
//                      (vLLM --reasoning-parser qwen3); default off (thinking stays in content)
//   fence              Fault: wrap the answer in ```json fences
//   echoSystemPrompt   Fault: answer with the system prompt itself
//   violateSchema      Fault & {reply?}: answer with JSON that breaks the schema
//                      (default {"unexpected_field": "not in the schema"})
//   truncate           Fault & {atTokens}: cut the output (thinking included) at atTokens tokens;
//                      max_tokens always cuts too. Counted with the real Qwen3 tokenizer
//   rateLimit          Fault & {retryAfter?}: 429, with that Retry-After header (seconds or an
//                      HTTP-date; none when absent)
//   serverError        Fault & {status?}: 5xx (default 500)
//   delayMs            number | (n) => number: wait before answering request n
//   supportsJsonSchema false: response_format json_schema -> 400 (servers without it)
//   rejectUnknownFields true: non-OpenAI body fields (chat_template_kwargs, top_k ...) -> 400,
//                      as OpenAI's API does
//   apiKey             when set, requests without "Authorization: Bearer <apiKey>" -> 401
//   embeddingDim       /v1/embeddings vector size (hashed n-gram embeddings; default 32)
// Faults apply in this order: rateLimit, serverError (both also to embeddings), then
// echoSystemPrompt or violateSchema or answer, then fence, thinking, truncation.
//
// What tests read: counts (requests; outcomes ok / http_<code> / client_gone; behaviours
// thinking, thinking_off, fenced, echoed, violated, truncated, truncated_in_think,
// reasoning_parsed), requests (each POST's number, path, body, Authorization header, outcome
// and usage), inFlight / maxInFlight (POSTs between arrival and answer), and hold() /
// release(k) / releaseAll() to keep answers back until a test lets them go.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { hashedEmbedding } from '../../encoders/hashed.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { buildChat, type FakeChatRequest } from './fake-vllm-chat.ts';
import { fires, type Fault } from './fake-vllm-faults.ts';

export type { Fault } from './fake-vllm-faults.ts';
export type { FakeChatRequest } from './fake-vllm-chat.ts';

export interface FakeVllmOptions {
  model?: string;
  seed?: number;
  answer?: (req: FakeChatRequest, n: number) => string;
  thinking?: (req: FakeChatRequest) => string;
  reasoningParser?: 'reasoning_content' | 'reasoning' | false;
  fence?: Fault;
  echoSystemPrompt?: Fault;
  violateSchema?: Fault & { reply?: string };
  truncate?: Fault & { atTokens: number };
  rateLimit?: Fault & { retryAfter?: string };
  serverError?: Fault & { status?: number };
  delayMs?: number | ((n: number) => number);
  supportsJsonSchema?: boolean;
  rejectUnknownFields?: boolean;
  apiKey?: string;
  embeddingDim?: number;
}

export interface FakeRequest {
  n: number;
  path: string;
  body: Record<string, unknown>;
  authorization: string | undefined;
  outcome: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
}

export interface FakeVllm {
  baseUrl: string;
  counts: Record<string, number>;
  requests: FakeRequest[];
  readonly inFlight: number;
  readonly maxInFlight: number;
  hold(): void;
  release(k?: number): void;
  releaseAll(): void;
  close(): Promise<void>;
}

const OPENAI_CHAT_FIELDS = new Set([
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
  'stream',
  'logprobs',
  'top_logprobs',
  'presence_penalty',
  'frequency_penalty',
  'user',
  'tools',
  'tool_choice',
]);

const defaultThinking = (req: FakeChatRequest) => {
  const sys = req.messages.find((m) => m.role === 'system')?.content ?? '';
  const user = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  return `Okay, the user says: "${user}". My instructions are: "${sys}". Let me work out what to answer.`;
};

const error = (status: number, type: string, message: string) => ({ status, body: { error: { message, type, param: null, code: status } } });

export async function startFakeVllm(o: FakeVllmOptions = {}): Promise<FakeVllm> {
  const model = o.model ?? 'Qwen/Qwen3-32B';
  const seed = o.seed ?? 0;
  const counts: Record<string, number> = {};
  const bump = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
  const requests: FakeRequest[] = [];
  const seen = new Map<string, number>();
  const sockets = new Set<Socket>();
  let inFlight = 0;
  let maxInFlight = 0;
  let holding = false;
  let waiters: (() => void)[] = [];

  function chat(req: FakeChatRequest, n: number, draw: (name: string, f: Fault | undefined) => boolean) {
    if (!Array.isArray(req.messages) || req.messages.length === 0) return error(400, 'BadRequestError', 'messages must be a non-empty list');
    if (o.rejectUnknownFields) {
      const unknown = Object.keys(req).filter((k) => !OPENAI_CHAT_FIELDS.has(k));
      if (unknown.length) return error(400, 'invalid_request_error', `Unrecognized request argument supplied: ${unknown.join(', ')}`);
    }
    if (o.supportsJsonSchema === false && req.response_format?.type === 'json_schema')
      return error(400, 'BadRequestError', 'response_format json_schema is not supported');
    const system = req.messages.find((m) => m.role === 'system')?.content ?? '';
    let content: string;
    if (draw('echoSystemPrompt', o.echoSystemPrompt)) (content = system), bump('echoed');
    else if (draw('violateSchema', o.violateSchema)) (content = o.violateSchema?.reply ?? '{"unexpected_field": "not in the schema"}'), bump('violated');
    else content = (o.answer ?? (() => 'I have no particular preference about that.'))(req, n);
    const fence = draw('fence', o.fence);
    if (fence) bump('fenced');
    const thinks = req.chat_template_kwargs?.enable_thinking !== false;
    bump(thinks ? 'thinking' : 'thinking_off');
    const built = buildChat(req, {
      content,
      fence,
      think: thinks ? (o.thinking ?? defaultThinking)(req) : null,
      cutAt: draw('truncate', o.truncate) ? (o.truncate?.atTokens ?? null) : null,
      reasoningField: o.reasoningParser || null,
    });
    built.tags.forEach(bump);
    return { status: 200, body: built.body };
  }

  function embeddings(body: Record<string, unknown>) {
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(input) || !input.every((t) => typeof t === 'string'))
      return error(400, 'BadRequestError', 'input must be a string or a list of strings');
    const dim = o.embeddingDim ?? 32;
    const data = input.map((t, index) => ({ object: 'embedding', index, embedding: Array.from(hashedEmbedding(t, dim)) }));
    const tokens = input.reduce((s, t) => s + qwen3Tokenizer().encode(t).length, 0);
    return { status: 200, body: { object: 'list', model, data, usage: { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens } } };
  }

  async function answer(path: string, body: Record<string, unknown>, auth: string | undefined, n: number) {
    if (o.apiKey !== undefined && auth !== `Bearer ${o.apiKey}`) return error(401, 'AuthenticationError', 'Invalid API key');
    if (body.model !== model) return error(404, 'NotFoundError', `The model \`${String(body.model)}\` does not exist.`);
    const key = JSON.stringify(body);
    const k = seen.get(key) ?? 0;
    seen.set(key, k + 1);
    const draw = (name: string, f: Fault | undefined) => fires(f, name, seed, n, key, k);
    if (draw('rateLimit', o.rateLimit)) return { ...error(429, 'RateLimitError', 'Too many requests'), retryAfter: o.rateLimit?.retryAfter };
    if (draw('serverError', o.serverError)) return error(o.serverError?.status ?? 500, 'InternalServerError', 'engine error');
    return path.endsWith('/embeddings') ? embeddings(body) : chat(body as FakeChatRequest, n, draw);
  }

  async function handlePost(req: IncomingMessage, res: ServerResponse, raw: string) {
    const path = req.url ?? '';
    const n = requests.length;
    const entry: FakeRequest = { n, path, body: {}, authorization: req.headers.authorization, outcome: 'pending' };
    requests.push(entry);
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    try {
      entry.body = JSON.parse(raw) as Record<string, unknown>;
      if (holding) await new Promise<void>((r) => waiters.push(r));
      const delay = typeof o.delayMs === 'function' ? o.delayMs(n) : (o.delayMs ?? 0);
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      const out =
        path === '/v1/chat/completions' || path === '/v1/embeddings'
          ? await answer(path, entry.body, entry.authorization, n)
          : error(404, 'NotFoundError', `no route ${path}`);
      if (res.destroyed || req.socket.destroyed) return void (entry.outcome = 'client_gone');
      entry.outcome = out.status === 200 ? 'ok' : `http_${out.status}`;
      entry.usage = (out.body as { usage?: FakeRequest['usage'] }).usage;
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if ('retryAfter' in out && out.retryAfter !== undefined) headers['retry-after'] = String(out.retryAfter);
      res.writeHead(out.status, headers).end(JSON.stringify(out.body));
    } catch (e) {
      entry.outcome = 'http_400';
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(error(400, 'BadRequestError', (e as Error).message).body));
    } finally {
      inFlight--;
      bump(entry.outcome);
    }
  }

  const server = createServer((req, res) => {
    bump('requests');
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/v1/models') {
        bump('ok');
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model', created: 0, owned_by: 'vllm', root: model, max_model_len: 40960 }] }));
      }
      void handlePost(req, res, raw);
    });
  });
  server.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));

  const releaseAll = () => ((holding = false), waiters.splice(0).forEach((w) => w()));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    counts,
    requests,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    hold: () => void (holding = true),
    release: (k = 1) => waiters.splice(0, k).forEach((w) => w()),
    releaseAll,
    close: () =>
      new Promise<void>((r) => {
        releaseAll();
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
