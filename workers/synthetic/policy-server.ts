// A synthetic OpenAI-compatible policy server over real HTTP (node:http), speaking the
// subset of vLLM's protocol gsteer uses: POST /v1/completions (prompt as token ids, seed,
// logprobs, return_token_ids), POST /v1/load_lora_adapter / unload_lora_adapter, GET
// /v1/models. It samples the toy policy (toy-policy.ts) of the named adapter and answers
// with a grammar-valid STOP turn (structured/turn/grammar.ts), after a fixed latency per
// completion (the orchestration benchmark's "generation time" knob) or, with `batching`,
// after the time a vLLM-style server with continuous batching would take (batching.ts; the
// fleet simulation's policy server, whose totals GET /stats reports).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { renderTurn } from '../../structured/turn/grammar.ts';
import { Rng } from '../../util/rng.ts';
import { readToyAdapter } from './toy-adapter.ts';
import { sampleToy, TOY_LEN, TOY_VOCAB, TOY_WORDS, toyIndex } from './toy-policy.ts';
import { BatchScheduler, type BatchingOptions } from './batching.ts';

/** The most tokens one completion may ask for (a turn of a fleet simulation: hundreds). */
const MAX_TOKENS = 8192;

export interface SyntheticServerOptions {
  port?: number;
  latencyMs?: number;
  /** Base model name (theta = 0), like vLLM's served model name. */
  baseModel?: string;
  /** Time each completion as continuous batching would (replaces latencyMs). */
  batching?: BatchingOptions;
  /** Keep a log of completions and adapter loads (tests read it through events()). */
  recordEvents?: boolean;
}

/** One thing the server did, in order: a completion sampled by an adapter, or an adapter loaded / unloaded. */
export interface ServerEvent {
  kind: 'complete' | 'load' | 'unload';
  model: string;
  /** For completions: the request's seed. */
  seed?: number;
}

export interface SyntheticServer {
  url: string; // …/v1
  completions(): number;
  events(): readonly ServerEvent[];
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  let s = '';
  for await (const chunk of req) s += chunk;
  return s ? (JSON.parse(s) as Record<string, unknown>) : {};
}

function send(res: ServerResponse, status: number, data: unknown): void {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  res.writeHead(status, { 'content-type': typeof data === 'string' ? 'text/plain' : 'application/json' });
  res.end(text);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startSyntheticServer(o: SyntheticServerOptions = {}): Promise<SyntheticServer> {
  const baseModel = o.baseModel ?? 'toy';
  const adapters = new Map<string, Float32Array>([[baseModel, new Float32Array(TOY_VOCAB)]]);
  let served = 0;
  const log: ServerEvent[] = [];
  const note = (e: ServerEvent) => o.recordEvents && log.push(e);
  const batch = o.batching ? new BatchScheduler(o.batching) : null;
  const complete = async (b: Record<string, unknown>, res: ServerResponse) => {
    const theta = adapters.get(String(b.model));
    if (!theta) return send(res, 404, { error: { message: `The model \`${String(b.model)}\` does not exist.`, type: 'NotFoundError', code: 404 } });
    const prompt = Array.isArray(b.prompt) ? (b.prompt as number[]) : [];
    const seed = typeof b.seed === 'number' ? b.seed : 0;
    const temperature = typeof b.temperature === 'number' ? b.temperature : 1;
    const n = Math.max(1, Math.min(MAX_TOKENS, typeof b.max_tokens === 'number' ? b.max_tokens : TOY_LEN));
    const { ids, logprobs } = sampleToy(theta, temperature, new Rng(seed), n);
    const words = ids.map((id) => TOY_WORDS[toyIndex(id)]).join(' ');
    const text = renderTurn({ state: [], plan: 'write the refined query', action: 'STOP', execute: words });
    note({ kind: 'complete', model: String(b.model), seed });
    if (batch) await batch.submit(prompt.length, n);
    else if (o.latencyMs) await sleep(o.latencyMs);
    served++;
    send(res, 200, {
      id: `cmpl-${served}`,
      object: 'text_completion',
      created: 0,
      model: String(b.model),
      choices: [
        {
          index: 0,
          text,
          finish_reason: 'stop',
          token_ids: ids,
          prompt_token_ids: prompt,
          logprobs: { tokens: ids.map((i) => `token_id:${i}`), token_logprobs: logprobs },
        },
      ],
      usage: { prompt_tokens: prompt.length, completion_tokens: ids.length, total_tokens: prompt.length + ids.length },
    });
  };
  const server = createServer((req, res) => {
    void (async () => {
      try {
        const path = (req.url ?? '').split('?')[0];
        if (req.method === 'GET' && path === '/v1/models')
          return send(res, 200, { object: 'list', data: [...adapters.keys()].map((id) => ({ id, object: 'model' })) });
        if (req.method === 'GET' && path === '/stats') return send(res, 200, { completions: served, ...(batch ? { batching: batch.stats } : {}) });
        if (req.method !== 'POST') return send(res, 404, 'not found');
        const b = await body(req);
        if (path === '/v1/completions') return await complete(b, res);
        if (path === '/v1/load_lora_adapter') {
          adapters.set(String(b.lora_name), readToyAdapter(String(b.lora_path)));
          note({ kind: 'load', model: String(b.lora_name) });
          return send(res, 200, `Success: LoRA adapter '${String(b.lora_name)}' added successfully.`);
        }
        if (path === '/v1/unload_lora_adapter') {
          adapters.delete(String(b.lora_name));
          note({ kind: 'unload', model: String(b.lora_name) });
          return send(res, 200, `Success: LoRA adapter '${String(b.lora_name)}' removed successfully.`);
        }
        send(res, 404, 'not found');
      } catch (e) {
        send(res, 400, { error: { message: (e as Error).message, code: 400 } });
      }
    })();
  });
  await new Promise<void>((r) => server.listen(o.port ?? 0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    completions: () => served,
    events: () => log,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
