// Request-body rules per model family (method §14.6). What a server accepts depends on the
// model behind it, not on the caller, so the rules live here, at the one place every chat body
// is built (request-body.ts), and every caller (simulator, judge, teacher, extractor, data
// builder, downstream judge and agent) gets them from its model name:
//   - OpenAI reasoning models (o1, o3, o4-mini, gpt-5, gpt-5.4 ...): the Chat Completions API
//     accepts only the default temperature and top_p (1) and answers 400 to any other value
//     ("Unsupported value: 'temperature' does not support 0 with this model. Only the default
//     (1) value is supported."), and refuses `max_tokens` ("... Use 'max_completion_tokens'
//     instead."). So no temperature and no top_p are sent, and the token cap goes as
//     `max_completion_tokens` (a cap on visible plus reasoning tokens).
//   - Qwen3 on vLLM: chat_template_kwargs ({enable_thinking: false} by default, qwen3.ts) is
//     kept; vLLM accepts max_tokens and any temperature.
//   - Any other model: the body as the caller asked.
// OpenAI's API also rejects unknown fields, so chat_template_kwargs is never sent to its
// models (configs default it to null for non-Qwen3 models; a configured value is dropped here).
import { isQwen3Model } from './qwen3.ts';

export type ModelFamily = 'openai_reasoning' | 'qwen3' | 'other';

/**
 * "o1", "o3-mini", "o4-mini-deep-research-2025-06-26", "gpt-5", "gpt-5.4-2026-03-05",
 * "openai/gpt-5-mini" ...; not "gpt-4o", "gpt-4.1", nor "gpt-5-chat-latest" (a non-reasoning
 * chat model that takes a temperature).
 */
export function isOpenAiReasoningModel(model: string): boolean {
  const name = model.trim().toLowerCase().split('/').pop() ?? '';
  if (/^gpt-5(?:[.-]\d+)*-chat\b/.test(name)) return false;
  return /^o[1-9](?:$|-)/.test(name) || /^gpt-5(?:$|[.-])/.test(name);
}

export function modelFamily(model: string): ModelFamily {
  if (isOpenAiReasoningModel(model)) return 'openai_reasoning';
  return isQwen3Model(model) ? 'qwen3' : 'other';
}

/** Sampling and length fields of one chat body, before the family's rule. */
export interface SamplingFields {
  temperature?: number | undefined;
  top_p?: number | undefined;
  max_tokens?: number | undefined;
  chat_template_kwargs?: Record<string, unknown> | null | undefined;
}

/** The same fields as the model's family takes them (field names as the body sends them). */
export function familyFields(model: string, f: SamplingFields): Record<string, unknown> {
  switch (modelFamily(model)) {
    case 'openai_reasoning':
      // only the default temperature / top_p; max_completion_tokens; no vLLM fields
      return { max_completion_tokens: f.max_tokens };
    case 'qwen3':
    case 'other':
      return { temperature: f.temperature, top_p: f.top_p, max_tokens: f.max_tokens, chat_template_kwargs: f.chat_template_kwargs };
  }
}
