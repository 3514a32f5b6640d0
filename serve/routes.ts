// The endpoints (vLLM's subset that rollouts and people use), as a table path -> method ->
// handler. Handlers get the parsed JSON body and return a JSON body, plain text or a stream.
import { renderChatML } from '../core/tokenizer.ts';
import { generate, prepare, type Engine, type GenerateJob } from './engine.ts';
import { str, type Body } from './fields.ts';
import { parseChatRequest, parseCompletionRequest, type RequestLimits } from './requests.ts';
import type { StepEvent } from './generation.ts';
import type { ServeMetrics } from './metrics.ts';
import { cachedTokensOf, chatResponse, completionResponse, type TokenNames } from './responses.ts';
import { chunker, type Send, type StreamShape } from './stream.ts';
import { badRequest } from './errors.ts';
import type { ServeModel } from './model.ts';
import { compileConstraint, ConstraintError, type CompiledConstraint } from '../structured/compile.ts';
import type { ConstraintSpec } from '../structured/constraint-spec.ts';
import { qwen3Vocab } from '../structured/vocab.ts';

/** vLLM's default max_tokens for /v1/completions (OpenAI's legacy default). */
const COMPLETIONS_DEFAULT_MAX_TOKENS = 16;

/** 200 with a JSON body, plain text, or server-sent events. */
export interface Reply {
  json?: unknown;
  text?: string;
  /** Content type of `text` (default text/plain; charset=utf-8). */
  contentType?: string;
  /** A streamed reply: server-sent events written through `send`. */
  sse?: (send: Send) => Promise<void>;
}

/** How the server decodes (shown in /v1/models as `batching`). */
export interface Batching {
  enabled: boolean;
  mode: 'auto' | 'on' | 'off';
  backend: string;
  /** Whether the backend computes a batched row bit for bit as alone (serve/batch-invariance.ts). */
  batchInvariant: boolean;
  maxBatchedTokens: number;
  blockSize: number;
  prefixCacheMb: number;
}

export interface ServerState extends Engine {
  startedAt: number; // unix seconds
  metrics: ServeMetrics;
  batching: Batching;
  limits: RequestLimits;
  /** Folders a lora_path sent over HTTP may be in (serve/adapters.ts checkLoraRoot). */
  loraRoots: readonly string[];
}

export type Handler = (state: ServerState, body: Body, signal: AbortSignal) => Promise<Reply>;

/** Validate and queue now (errors are plain JSON replies); stream the steps once the SSE reply starts. */
function streamed(state: ServerState, job: GenerateJob, names: TokenNames, shape: StreamShape, signal: AbortSignal): Reply {
  let onStep: (index: number, ev: StepEvent) => void = () => {};
  const prepared = prepare(state, job, (i, ev) => onStep(i, ev));
  return {
    sse: async (send) => {
      const chunks = chunker(names, shape, send);
      onStep = chunks.step;
      const choices = await prepared.run(signal);
      chunks.end(cachedTokensOf(choices, job.params.n));
    },
  };
}

/**
 * The request's constraint, compiled against the model's vocabulary (its kept ids when
 * trimmed) before anything runs: a grammar xgrammar refuses is a 400 naming the field.
 */
async function constraintFor(model: ServeModel, spec: ConstraintSpec | null): Promise<CompiledConstraint | null> {
  if (!spec) return null;
  try {
    return await compileConstraint(spec, qwen3Vocab(model.support.length < model.vocabSize ? model.support : null, model.vocabSize));
  } catch (e) {
    if (e instanceof ConstraintError) throw badRequest(e.message, e.field);
    throw e;
  }
}

async function completions(state: ServerState, body: Body, signal: AbortSignal): Promise<Reply> {
  const req = parseCompletionRequest(body, state.model.vocabSize, state.limits);
  const prompts = req.prompts.map((p) => (typeof p === 'string' ? state.tok.encode(p) : p));
  const constraint = await constraintFor(state.model, req.constraint);
  const job = { params: req, prompts, topLogprobs: req.logprobs ?? 0, defaultMaxTokens: COMPLETIONS_DEFAULT_MAX_TOKENS, constraint };
  const names = { tok: state.tok, asIds: req.returnTokensAsTokenIds };
  const logprobs = req.logprobs !== null;
  if (req.stream) {
    const promptTokens = prompts.reduce((s, p) => s + p.length, 0);
    const shape = {
      kind: 'completion' as const,
      model: req.model,
      logprobs,
      returnTokenIds: req.returnTokenIds,
      includeUsage: req.streamUsage,
      promptTokens,
      constraint,
      maxTokens: req.maxTokens,
    };
    return streamed(state, job, names, shape, signal);
  }
  const choices = await generate(state, job, signal);
  const shape = { model: req.model, prompts, n: req.n, logprobs, returnTokenIds: req.returnTokenIds, constraint, maxTokens: req.maxTokens };
  return { json: completionResponse(names, shape, choices) };
}

async function chatCompletions(state: ServerState, body: Body, signal: AbortSignal): Promise<Reply> {
  const req = parseChatRequest(body, state.model.vocabSize, state.limits);
  // Thinking disabled, the way Qwen3's template does it (core/tokenizer.ts).
  const promptIds = state.tok.encode(renderChatML(req.messages, true));
  const constraint = await constraintFor(state.model, req.constraint);
  const job = { params: req, prompts: [promptIds], topLogprobs: req.topLogprobs, defaultMaxTokens: 'rest' as const, constraint };
  const names = { tok: state.tok, asIds: req.returnTokensAsTokenIds };
  if (req.stream) {
    const shape = {
      kind: 'chat' as const,
      model: req.model,
      logprobs: req.logprobs,
      returnTokenIds: req.returnTokenIds,
      includeUsage: req.streamUsage,
      promptTokens: promptIds.length,
      constraint,
      maxTokens: req.maxTokens,
    };
    return streamed(state, job, names, shape, signal);
  }
  const choices = await generate(state, job, signal);
  const shape = { model: req.model, promptIds, logprobs: req.logprobs, returnTokenIds: req.returnTokenIds, constraint, maxTokens: req.maxTokens };
  return { json: chatResponse(names, shape, choices) };
}

async function models(state: ServerState): Promise<Reply> {
  const base = state.adapters.baseName;
  const card = (id: string, root: string, parent: string | null, created: number) => ({
    id,
    object: 'model',
    created,
    owned_by: 'gsteer',
    root,
    parent,
    max_model_len: state.model.maxContext,
  });
  const data = [
    { ...card(base, state.model.dir, null, state.startedAt), batching: batchingCard(state.batching) },
    ...state.adapters.list().map((a) => card(a.name, a.path, base, a.created)),
  ];
  return { json: { object: 'list', data } };
}

/** gsteer's own field on the base model's card: how requests are decoded and whether that is batch-invariant. */
function batchingCard(b: Batching) {
  return {
    enabled: b.enabled,
    mode: b.mode,
    backend: b.backend,
    // same seed + same request = same completion at any concurrency: always when not batching
    batch_invariant: !b.enabled || b.batchInvariant,
    backend_batch_invariant: b.batchInvariant,
    max_num_batched_tokens: b.enabled ? b.maxBatchedTokens : null,
    block_size: b.enabled ? b.blockSize : null,
    prefix_cache_mb: b.enabled ? b.prefixCacheMb : 0,
  };
}

async function metrics(state: ServerState): Promise<Reply> {
  return { text: await state.metrics.registry.metrics(), contentType: state.metrics.registry.contentType };
}

async function loadAdapter(state: ServerState, body: Body): Promise<Reply> {
  const name = str(body, 'lora_name');
  const path = str(body, 'lora_path');
  await state.adapters.load(name, path, state.loraRoots);
  return { text: `Success: LoRA adapter '${name}' added successfully.` };
}

async function unloadAdapter(state: ServerState, body: Body): Promise<Reply> {
  const name = str(body, 'lora_name');
  state.adapters.unload(name);
  return { text: `Success: LoRA adapter '${name}' removed successfully.` };
}

async function health(state: ServerState): Promise<Reply> {
  return { json: { status: 'ok', in_flight: state.scheduler.inFlight } };
}

export const ROUTES: Record<string, Partial<Record<'GET' | 'POST', Handler>>> = {
  '/health': { GET: health },
  '/metrics': { GET: metrics },
  '/v1/models': { GET: models },
  '/v1/completions': { POST: completions },
  '/v1/chat/completions': { POST: chatCompletions },
  '/v1/load_lora_adapter': { POST: loadAdapter },
  '/v1/unload_lora_adapter': { POST: unloadAdapter },
};
