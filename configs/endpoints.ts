// The one mapping from a config section (policy, simulator, judge, eval.extractor, encoder)
// to the endpoints/ layer's EndpointOptions, so every LLM caller gets the same retry rule,
// concurrency cap, thinking switch and JSON mode from its section (method §14.6).
import { defaultChatTemplateKwargs, type EndpointOptions, type ResponseFormatMode } from '../endpoints/index.ts';

export interface EndpointSection {
  baseUrl?: string | undefined;
  model: string;
  apiKeyEnv: string;
  timeoutMs: number;
  maxRetries: number;
  concurrency: number;
  /** Absent: {enable_thinking: false} for Qwen3-family models, nothing otherwise; null: never sent. */
  chatTemplateKwargs?: Record<string, unknown> | null | undefined;
  responseFormat?: ResponseFormatMode;
  maxResponseMb?: number;
}

/**
 * `role` names the metrics (llm/<role>/...) and the call records; `baseUrl` overrides the
 * section's (the embedded policy server's URL). Throws when neither gives a URL.
 */
export function endpointOptions(role: string, s: EndpointSection, baseUrl = s.baseUrl): EndpointOptions {
  if (!baseUrl) throw new Error(`internal: endpoint ${role} has no baseUrl (the config schema requires one for this kind)`);
  return {
    role,
    baseUrl,
    model: s.model,
    apiKeyEnv: s.apiKeyEnv,
    timeoutMs: s.timeoutMs,
    maxRetries: s.maxRetries,
    concurrency: s.concurrency,
    chatTemplateKwargs: s.chatTemplateKwargs === undefined ? defaultChatTemplateKwargs(s.model) : s.chatTemplateKwargs,
    ...(s.responseFormat ? { responseFormat: s.responseFormat } : {}),
    ...(s.maxResponseMb !== undefined ? { maxResponseMb: s.maxResponseMb } : {}),
  };
}
