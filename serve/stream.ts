// Streamed responses (`stream: true`): server-sent events in vLLM's chunk shapes, one chunk
// per decode step of each choice (`text_completion` / `chat.completion.chunk`), the
// finish_reason on a choice's last chunk, an optional usage chunk, then `data: [DONE]`.
import { randomUUID } from 'node:crypto';
import { DEAD_END, type StepEvent } from './generation.ts';
import { appliedConstraint, chatLogprobEntry, tokenName, topMap, usage, type AppliedShape, type TokenNames } from './responses.ts';

export interface StreamShape extends AppliedShape {
  kind: 'completion' | 'chat';
  model: string;
  logprobs: boolean;
  returnTokenIds: boolean;
  includeUsage: boolean;
  promptTokens: number;
}

export type Send = (data: unknown) => void;

/** Chunk writer for one request: `step` per decode step, `end` once all choices are done. */
export function chunker(names: TokenNames, shape: StreamShape, send: Send) {
  const id = `${shape.kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomUUID().replaceAll('-', '')}`;
  const created = Math.floor(Date.now() / 1000);
  const object = shape.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  const started = new Set<number>(); // chat: the first chunk of a choice carries the role
  let completionTokens = 0;
  const head = { id, object, created, model: shape.model, ...appliedConstraint(shape.constraint, shape.maxTokens) };

  // A dead end (ev.id < 0) ends a choice with a chunk that carries no token.
  const deadEnd = (ev: StepEvent) => ({ finish_reason: ev.finishReason, stop_reason: DEAD_END, ...(shape.returnTokenIds ? { token_ids: [] } : {}) });

  const completionChoice = (index: number, ev: StepEvent) => {
    if (ev.id < 0)
      return { index, text: ev.text, logprobs: shape.logprobs ? { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] } : null, ...deadEnd(ev) };
    return {
      index,
      text: ev.text,
      logprobs: shape.logprobs
        ? {
            tokens: [tokenName(names, ev.id)],
            token_logprobs: [ev.logprob],
            top_logprobs: ev.top ? [topMap(names, ev.top, ev.id, ev.logprob)] : null,
            text_offset: [ev.textOffset],
          }
        : null,
      finish_reason: ev.finishReason,
      ...(shape.returnTokenIds ? { token_ids: [ev.id] } : {}),
    };
  };

  const chatChoice = (index: number, ev: StepEvent) => {
    const delta = started.has(index) ? { content: ev.text } : { role: 'assistant', content: ev.text };
    started.add(index);
    if (ev.id < 0) return { index, delta, logprobs: shape.logprobs ? { content: [] } : null, ...deadEnd(ev) };
    return {
      index,
      delta,
      logprobs: shape.logprobs ? { content: [chatLogprobEntry(names, ev.id, ev.logprob, ev.top)] } : null,
      finish_reason: ev.finishReason,
      ...(shape.returnTokenIds ? { token_ids: [ev.id] } : {}),
    };
  };

  return {
    step(index: number, ev: StepEvent): void {
      if (ev.id >= 0) completionTokens++;
      send({ ...head, choices: [shape.kind === 'chat' ? chatChoice(index, ev) : completionChoice(index, ev)] });
    },
    /** `cachedTokens`: the request's prompt tokens served from the prefix cache. */
    end(cachedTokens: number): void {
      if (shape.includeUsage) send({ ...head, choices: [], usage: usage(shape.promptTokens, completionTokens, cachedTokens) });
    },
  };
}
