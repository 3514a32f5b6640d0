// The one factory for every LLM role (policy, simulator, judge, teacher, extractor, encoder,
// builder, agent ...): an Endpoint makes plain-text chat calls, JSON chat calls validated
// against a schema, and embeddings calls, all under one retry rule, one concurrency cap per
// endpoint object, and one call record per attempt.
import type OpenAI from 'openai';
import pLimit from 'p-limit';
import { InputError } from '../util/errors.ts';
import { registerEnvSecrets } from '../util/secrets.ts';
import { callWithRetries, type AttemptOutcome, type LoopContext } from './call-loop.ts';
import { endpointUrl, maskUrl, openaiClient } from './client.ts';
import { readEmbeddings } from './embeddings.ts';
import { BadReply } from './errors.ts';
import { nullSink, type CallSink } from './records.ts';
import { answerText, firstChoice, readJson, removeThinking } from './reply.ts';
import { chatBody, embeddingsBody, responseFormatFor, type JsonSpec } from './request-body.ts';
import { DEFAULT_RETRY_TIMING } from './retry-rule.ts';
import type { ChatMessage, ChatReply, ChatRequest, EmbedReply, EndpointOptions, JsonReply, Usage } from './types.ts';

export interface EndpointDeps {
  sink?: CallSink;
  /** Waits before a retry (tests record the waits instead of sleeping). */
  sleep?: (ms: number) => Promise<void>;
  /** Epoch milliseconds (record times, latencies, Retry-After dates). */
  now?: () => number;
}

export interface Endpoint {
  readonly options: Readonly<EndpointOptions>;
  readonly sink: CallSink;
  chat(req: ChatRequest): Promise<ChatReply>;
  chatJson<T>(req: ChatRequest, spec: JsonSpec<T>): Promise<JsonReply<T>>;
  embed(texts: string[]): Promise<EmbedReply>;
  /**
   * Any other route under the same rule, cap and records, e.g. the policy's /v1/completions
   * with token ids: `send` makes one attempt with the SDK client and may throw BadReply to
   * refuse a reply. Not cached by withRequestCache.
   */
  request<T>(route: string, send: (client: OpenAI) => Promise<AttemptOutcome<T>>): Promise<T>;
}

type Completion = { usage?: { prompt_tokens?: number; completion_tokens?: number } | null };
const usageOf = (r: Completion): Usage | null =>
  r.usage ? { promptTokens: r.usage.prompt_tokens ?? 0, completionTokens: r.usage.completion_tokens ?? 0 } : null;
const systemPromptOf = (messages: ChatMessage[]) => messages.find((m) => m.role === 'system')?.content;

function checkOptions(o: EndpointOptions): void {
  const bad = (field: string, rule: string) =>
    new InputError(`endpoint ${o.role || '(no role)'}: ${field} = ${JSON.stringify((o as unknown as Record<string, unknown>)[field])} ${rule}`);
  if (!o.role) throw bad('role', 'must name the caller (policy, simulator, judge ...)');
  if (!/^https?:\/\/[^\s]+$/.test(o.baseUrl ?? '')) throw bad('baseUrl', 'must be an http(s) URL ending in /v1, e.g. http://127.0.0.1:8000/v1');
  if (!o.model) throw bad('model', 'must name the served model');
  if (!(o.timeoutMs > 0)) throw bad('timeoutMs', 'must be > 0');
  if (!Number.isInteger(o.maxRetries) || o.maxRetries < 0) throw bad('maxRetries', 'must be an integer >= 0');
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw bad('concurrency', 'must be an integer >= 1');
}

export function createEndpoint(options: EndpointOptions, deps: EndpointDeps = {}): Endpoint {
  checkOptions(options);
  registerEnvSecrets([options.apiKeyEnv]); // the key is masked in every record, error and log
  const client: OpenAI = openaiClient(options);
  const sink = deps.sink ?? nullSink;
  const limit = pLimit(options.concurrency);
  const loop = (path: string): LoopContext => ({
    role: options.role,
    model: options.model,
    url: maskUrl(endpointUrl(options.baseUrl, path)),
    apiKeyEnv: options.apiKeyEnv,
    maxRetries: options.maxRetries,
    timing: { ...DEFAULT_RETRY_TIMING, ...options.retry },
    limit,
    sink,
    sleep: deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
    now: deps.now ?? Date.now,
  });
  const complete = (body: Record<string, unknown>) =>
    client.chat.completions.create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming) as Promise<OpenAI.ChatCompletion>;

  return {
    options,
    sink,
    chat: (req) =>
      callWithRetries(loop('chat/completions'), async () => {
        const res = await complete(chatBody(options, req, req.messages));
        const { content, finishReason } = firstChoice(res);
        return { value: { text: answerText(content, finishReason, systemPromptOf(req.messages)), usage: usageOf(res) }, usage: usageOf(res) };
      }),

    chatJson: <T>(req: ChatRequest, spec: JsonSpec<T>) => {
      const messages = [...req.messages];
      const format = responseFormatFor(options, spec);
      return callWithRetries(loop('chat/completions'), async (_k, previous) => {
        if (spec.feedback && previous instanceof BadReply) {
          // The data builder's repair turn: the refused reply, then what was wrong with it.
          let said = '';
          try {
            said = removeThinking(previous.content ?? '');
          } catch {
            said = '';
          }
          messages.push({ role: 'assistant', content: said || '(no answer)' }, { role: 'user', content: previous.feedback });
        }
        const res = await complete(chatBody(options, req, messages, format));
        const { content, finishReason } = firstChoice(res);
        const { value, json } = readJson(answerText(content, finishReason, systemPromptOf(messages)), spec.schema, content);
        return { value: { value, text: json, usage: usageOf(res) }, usage: usageOf(res) };
      });
    },

    embed: (texts) =>
      callWithRetries(loop('embeddings'), async () => {
        const res = await client.embeddings.create(embeddingsBody(options, texts) as unknown as OpenAI.EmbeddingCreateParams);
        const usage = res.usage ? { promptTokens: res.usage.prompt_tokens ?? 0, completionTokens: 0 } : null;
        return { value: { vectors: readEmbeddings(res, texts.length), usage }, usage };
      }),

    request: (route, send) => callWithRetries(loop(route), () => send(client)),
  };
}
