// One way to build an `openai` client for the policy server, the simulator and the judge.
// The API key is read from the environment variable the config names (never from the
// config itself, never logged). Local servers (vLLM without --api-key, `gsteer serve`)
// accept any key, so an unset variable sends the placeholder "EMPTY" (vLLM's convention).
import OpenAI from 'openai';

export interface EndpointConfig {
  baseUrl: string;
  apiKeyEnv: string;
  timeoutMs: number;
}

export function openaiClient(c: EndpointConfig): OpenAI {
  return new OpenAI({
    baseURL: c.baseUrl,
    apiKey: process.env[c.apiKeyEnv] || 'EMPTY',
    timeout: c.timeoutMs,
    maxRetries: 0, // retries are ours (openai-retry.ts): 5xx/network/timeouts only
  });
}

/** The URL a request goes to, for error messages ("policy server http://.../completions"). */
export function endpointUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}
