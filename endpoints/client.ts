// The one way gsteer builds an `openai` SDK client: the API key read from the environment
// variable the config names ("EMPTY" when unset, vLLM's placeholder for servers started
// without --api-key), the SDK's own retries off (maxRetries 0) because the retry rule is
// ours (retry-rule.ts: it honours Retry-After on 429 and retries bad replies, which the SDK
// cannot see), and its fetch bounded (bounded-fetch.ts): timeoutMs is one deadline for the
// whole exchange, body included (the SDK's own timer stops at the headers), and the reply
// is cut off at maxResponseMb.
import OpenAI from 'openai';
import { boundedFetch, DEFAULT_MAX_RESPONSE_MB, mib } from './bounded-fetch.ts';
import type { EndpointOptions } from './types.ts';

export function openaiClient(o: Pick<EndpointOptions, 'baseUrl' | 'apiKeyEnv' | 'timeoutMs' | 'maxResponseMb'>): OpenAI {
  return new OpenAI({
    baseURL: o.baseUrl,
    apiKey: (o.apiKeyEnv && process.env[o.apiKeyEnv]) || 'EMPTY',
    // The SDK's timer is a backstop; the bounded fetch's deadline fires first and names itself.
    timeout: o.timeoutMs + 1000,
    maxRetries: 0,
    fetch: boundedFetch({ deadlineMs: o.timeoutMs, maxBytes: mib(o.maxResponseMb ?? DEFAULT_MAX_RESPONSE_MB) }),
  });
}

/** `${baseUrl}/${path}` with one slash between. */
export function endpointUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/** A URL fit for logs and records: the one masking rule (util/secrets.ts). */
export { maskUrl } from '../util/secrets.ts';
