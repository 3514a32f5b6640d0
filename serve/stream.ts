// Streamed responses (`stream: true`): server-sent events in vLLM's chunk shapes, one chunk
// per decode step of each choice (`text_completion` / `chat.completion.chunk`), the
// finish_reason on a choice's last chunk, an optional usage chunk, then `data: [DONE]`.
import { randomUUID } from 'node:crypto';
import type { StepEvent } from './generation.ts';
import { chatLogprobEntry, tokenName, topMap, usage, type TokenNames } from './responses.ts';

export interface StreamShape {
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
  const head = { id, object, created, model: shape.model };

  const completionChoice = (index: number, ev: StepEvent) => ({
    index,
    text: ev.text,
    logprobs: shape.logprobs
      ? { tokens: [tokenName(names, ev.id)], token_logprobs: [ev.logprob], top_logprobs: ev.top ? [topMap(names, ev.top, ev.id, ev.logprob)] : null, text_offset: [ev.textOffset] }
      : null,
    finish_reason: ev.finishReason,
    ...(shape.returnTokenIds ? { token_ids: [ev.id] } : {}),
  });

  const chatChoice = (index: number, ev: StepEvent) => {
    const delta = started.has(index) ? { content: ev.text } : { role: 'assistant', content: ev.text };
    started.add(index);
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
      completionTokens++;
      send({ ...head, choices: [shape.kind === 'chat' ? chatChoice(index, ev) : completionChoice(index, ev)] });
    },
    /** `cachedTokens`: the request's prompt tokens served from the prefix cache. */
    end(cachedTokens: number): void {
      if (shape.includeUsage) send({ ...head, choices: [], usage: usage(shape.promptTokens, completionTokens, cachedTokens) });
    },
  };
}
