// Talking to the policy server as its operator: wait until it answers (and the trainer service), load / unload LoRA
// adapters at runtime (vLLM `POST /v1/load_lora_adapter {lora_name, lora_path}`, the same
// on `gsteer serve`). Bounded retries with backoff; the final error names the URL. Every
// attempt goes through endpoints/'s bounded fetch: one deadline for the whole exchange
// (body included) and a small size cap (these replies are a few hundred bytes).
import { boundedFetch, mib } from '../endpoints/index.ts';
import { TransientError } from '../util/errors.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface AdminOptions {
  maxRetries: number;
  baseDelayMs?: number;
  /** Poll at a fixed interval instead of doubling (waiting for a child server to boot). */
  fixedDelay?: boolean;
  timeoutMs?: number;
  apiKey?: string;
}

/** `http://host:8000/v1` -> `http://host:8000/v1/<path>` */
const endpoint = (baseUrl: string, path: string) => `${baseUrl.replace(/\/+$/, '')}/${path}`;

async function call(url: string, init: RequestInit, o: AdminOptions, what: string): Promise<string> {
  let last = '';
  for (let attempt = 0; attempt <= o.maxRetries; attempt++) {
    if (attempt > 0) await sleep(o.fixedDelay ? (o.baseDelayMs ?? 500) : Math.min(8000, (o.baseDelayMs ?? 500) * 2 ** (attempt - 1)));
    try {
      const headers = { 'content-type': 'application/json', ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}) };
      const res = await boundedFetch({ deadlineMs: o.timeoutMs ?? 60_000, maxBytes: mib(4) })(url, { ...init, headers });
      const text = await res.text();
      if (res.ok) return text;
      last = `HTTP ${res.status}: ${text.slice(0, 300)}`;
      if (res.status < 500) break; // a 4xx will not change on retry
    } catch (e) {
      last = (e as Error).cause ? String((e as Error).cause) : (e as Error).message;
    }
  }
  throw new TransientError(`${what} ${url} failed after ${o.maxRetries + 1} attempt(s): ${last}; check that the server is up and reachable at that URL`);
}

export async function waitForPolicyServer(baseUrl: string, o: AdminOptions): Promise<void> {
  await call(endpoint(baseUrl, 'models'), { method: 'GET' }, o, 'policy server');
}

export async function loadAdapter(baseUrl: string, name: string, path: string, o: AdminOptions): Promise<void> {
  await call(
    endpoint(baseUrl, 'load_lora_adapter'),
    { method: 'POST', body: JSON.stringify({ lora_name: name, lora_path: path }) },
    o,
    `loading adapter ${name} into`,
  );
}

export async function unloadAdapter(baseUrl: string, name: string, o: AdminOptions): Promise<void> {
  await call(endpoint(baseUrl, 'unload_lora_adapter'), { method: 'POST', body: JSON.stringify({ lora_name: name }) }, o, `unloading adapter ${name} from`);
}

/** gsteer's trainer service (`gsteer trainer serve`, started by launch.ts): polls /api/v1/healthz while its model loads. */
export async function waitForTrainerService(baseUrl: string): Promise<void> {
  await call(
    endpoint(baseUrl, 'api/v1/healthz'),
    { method: 'GET' },
    { maxRetries: 1200, baseDelayMs: 250, fixedDelay: true, timeoutMs: 5000 },
    'trainer service',
  );
}
