// `startServer`: the embedded OpenAI-compatible policy server (method §9) in-process, for
// `gsteer serve`, the orchestrator and tests. Loads the model (and adapters given up
// front), listens, and closes gracefully: stop accepting, let in-flight requests finish,
// then free the model.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { qwen3Tokenizer, type Tokenizer } from '../core/tokenizer.ts';
import { InputError } from '../util/errors.ts';
import { AdapterRegistry } from './adapters.ts';
import { adapterNamespace, BatchScheduler } from './batch-scheduler.ts';
import { httpHandler } from './http.ts';
import { serveMetrics } from './metrics.ts';
import type { ServeModel } from './model.ts';
import { PrefixCache } from './prefix-cache.ts';
import type { Batching, ServerState } from './routes.ts';
import { Scheduler, type GenScheduler } from './scheduler.ts';
import { DEFAULT_MAX_CHOICES, promptBytesFor } from './requests.ts';
import type { BackendKind } from '../model/backend.ts';

export interface ServeOptions {
  /** Hugging Face model folder (config.json + model.safetensors [+ vocab_map.json]). */
  modelDir?: string;
  /** An already-loaded model instead of `modelDir` (the server then owns and disposes it). */
  model?: ServeModel;
  /** The id requests use for the base model; like vLLM, defaults to the model path as given. */
  servedModelName?: string;
  /** LoRA adapters to load at start: name -> PEFT folder. */
  adapters?: Record<string, string>;
  host?: string; // default 127.0.0.1
  port?: number; // default 0 = any free port
  backend?: BackendKind; // default auto
  /** Sequences decoded at once (the rest wait in FIFO order); default 8. */
  maxConcurrency?: number;
  /**
   * `on`: one forward pass per step for all sequences (continuous batching); `off`: the
   * interleaved scheduler, one sequence per pass; `auto` (default): on where the backend is
   * batch-invariant (wasm, cpu), off elsewhere (serve/README.md, "Batch invariance").
   */
  batching?: 'auto' | 'on' | 'off';
  /** Batched: new positions per forward pass (vLLM's max_num_batched_tokens); default 256. */
  maxBatchedTokens?: number;
  /** Batched: prefill chunk and prefix-cache block size, in positions; default 64 (vLLM: 16; see serve/README.md). */
  blockSize?: number;
  /** Batched: prefix cache budget in MiB (0 = off); default 256. */
  prefixCacheMb?: number;
  /** Bearer key for /v1/*; required for a host other than loopback (any host is then answered). */
  apiKey?: string;
  /** Folders a lora_path sent over HTTP may be in; default: the working directory and the folders of `adapters`. */
  loraRoots?: string[];
  /** Largest text prompt (or chat's messages) in UTF-8 bytes, checked before tokenizing; default 16 x max_model_len. */
  maxPromptBytes?: number;
  /** Most choices (prompts x n) per request; default 128. */
  maxChoices?: number;
  /** The tokenizer (default Qwen3's; tests pass one that counts what it is given). */
  tokenizer?: Tokenizer;
  log?: (line: string) => void;
  /** false: log errors only, not one line per request. */
  logRequests?: boolean;
}

const LOOPBACK_HOST = /^(localhost|127\.\d+\.\d+\.\d+|::1|\[::1\])$/i;

/** The bind rule, checked before the model loads: beyond loopback only with an API key. */
export function checkServeBind(host: string, apiKey: string | undefined): void {
  if (!LOOPBACK_HOST.test(host) && !apiKey)
    throw new InputError(
      `--host ${host} would serve the policy (load and unload adapters, generate) beyond this machine without an API key; the rule: any host other than 127.0.0.1/localhost needs --api-key-env VAR (or --api-key KEY); make one with: openssl rand -hex 32`,
    );
}

export interface RunningServer {
  /** Base URL without /v1, e.g. http://127.0.0.1:41234 */
  url: string;
  modelName: string;
  close(): Promise<void>;
}

export async function startServer(opts: ServeOptions): Promise<RunningServer> {
  checkServeBind(opts.host ?? '127.0.0.1', opts.apiKey);
  // Imported on demand so a server over an injected model does not load tfjs.
  const model = opts.model ?? (await (await import('./tfjs-model.ts')).loadServeModel(requireDir(opts.modelDir), opts.backend ?? 'auto', opts.log));
  const modelName = opts.servedModelName ?? opts.modelDir ?? model.dir;
  const batching = batchingOf(opts, model);
  const cache =
    batching.enabled && batching.prefixCacheMb > 0 ? new PrefixCache(batching.prefixCacheMb * 2 ** 20, batching.blockSize, 4 * model.support.length) : null;
  const adapters = new AdapterRegistry(model, modelName, (handle) => cache?.dropNamespace(adapterNamespace(handle)));
  try {
    return await listen(opts, model, adapters, batching, cache);
  } catch (e) {
    adapters.disposeAll();
    cache?.clear();
    model.dispose();
    throw e;
  }
}

function batchingOf(opts: ServeOptions, model: ServeModel): Batching {
  const mode = opts.batching ?? 'auto';
  const positive = (name: string, v: number) => {
    if (!Number.isInteger(v) || v < 1) throw new InputError(`${name} must be an integer >= 1 but is ${v}`);
    return v;
  };
  const prefixCacheMb = opts.prefixCacheMb ?? 256;
  if (!(prefixCacheMb >= 0)) throw new InputError(`prefix cache size must be >= 0 MiB but is ${prefixCacheMb}`);
  return {
    enabled: mode === 'on' || (mode === 'auto' && model.backend.batchInvariant),
    mode,
    batchInvariant: model.backend.batchInvariant,
    backend: model.backend.name,
    maxBatchedTokens: positive('max batched tokens', opts.maxBatchedTokens ?? 256),
    blockSize: positive('block size', opts.blockSize ?? 64),
    prefixCacheMb,
  };
}

async function listen(opts: ServeOptions, model: ServeModel, adapters: AdapterRegistry, batching: Batching, cache: PrefixCache | null): Promise<RunningServer> {
  for (const [name, dir] of Object.entries(opts.adapters ?? {})) {
    await adapters.load(name, dir).catch((e: Error) => {
      throw new InputError(`adapter ${name}=${dir}: ${e.message}`);
    });
  }
  const maxConcurrency = opts.maxConcurrency ?? 8;
  let scheduler: GenScheduler | null = null;
  const metrics = serveMetrics({
    running: () => (scheduler ? scheduler.inFlight - scheduler.waiting : 0),
    waiting: () => scheduler?.waiting ?? 0,
    cache: () => cache?.stats() ?? null,
  });
  scheduler = batching.enabled
    ? new BatchScheduler(model, { maxConcurrency, maxBatchedTokens: batching.maxBatchedTokens, blockSize: batching.blockSize, cache, metrics })
    : new Scheduler(maxConcurrency, metrics);
  const limits = {
    maxPromptBytes: opts.maxPromptBytes ?? promptBytesFor(model.maxContext),
    maxChoices: opts.maxChoices ?? DEFAULT_MAX_CHOICES,
    maxContext: model.maxContext,
  };
  const loraRoots = opts.loraRoots ?? [process.cwd(), ...Object.values(opts.adapters ?? {}).map((d) => dirname(d))];
  const state: ServerState = {
    model,
    tok: opts.tokenizer ?? qwen3Tokenizer(),
    adapters,
    scheduler,
    metrics,
    batching,
    limits,
    loraRoots,
    startedAt: Math.floor(Date.now() / 1000),
  };
  const server = createServer(httpHandler(state, { apiKey: opts.apiKey, log: opts.log, logRequests: opts.logRequests }));
  // Clients keep sockets alive for the server's Keep-Alive hint minus 1 s (undici); with Node's
  // default 5 s, a client whose event loop was busy for longer can send on a socket the server
  // is closing at that moment (ECONNRESET). 30 s (< headersTimeout, 60 s) leaves that margin.
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'EADDRINUSE' ? new InputError(`port ${opts.port} on ${opts.host ?? '127.0.0.1'} is in use; pick another --port (0 = any free port)`) : e,
      ),
    );
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      const stopped = new Promise<void>((r) => server.close(() => r()));
      // Keep-alive sockets become idle once their last response is written; close them
      // as they do (destroying a busy socket would cut a response short).
      const sweep = setInterval(() => server.closeIdleConnections(), 25);
      await state.scheduler.drain();
      await stopped;
      clearInterval(sweep);
      adapters.disposeAll();
      cache?.clear();
      model.dispose();
    })());
  return { url: `http://${host}:${port}`, modelName: adapters.baseName, close };
}

function requireDir(dir: string | undefined): string {
  if (!dir) throw new Error('internal: startServer needs modelDir or model');
  return dir;
}
