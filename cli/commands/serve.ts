// `gsteer serve`: the embedded OpenAI-compatible policy server (serve/) over a tfjs Qwen3
// model, speaking the subset of vLLM's API that rollouts use (method §9).
import { parseArgs } from 'node:util';
import { existsSync, statSync } from 'node:fs';
import { checkServeBind, startServer } from '../../serve/server.ts';
import type { BackendKind } from '../../model/backend.ts';
import { InputError } from '../../util/errors.ts';

export const summary = 'OpenAI-compatible policy server over a tfjs Qwen3 model (+ runtime LoRA)';
export const usage = `usage: gsteer serve --model DIR [--adapter NAME=DIR ...] [--port P] [--host H]
                   [--backend auto|gpu|node|wasm|cpu] [--max-concurrency N]
                   [--batching auto|on|off] [--max-num-batched-tokens N] [--block-size N]
                   [--prefix-cache-mb MB] [--served-model-name NAME] [--api-key-env VAR | --api-key KEY]
                   [--lora-root DIR ...] [--max-prompt-bytes N] [--max-choices N]

Serves GET /v1/models, POST /v1/completions (prompt as text or token ids),
POST /v1/chat/completions (Qwen3 ChatML, thinking disabled), POST /v1/load_lora_adapter,
POST /v1/unload_lora_adapter, GET /health and GET /metrics (Prometheus), in vLLM's shapes.

  --model DIR            Hugging Face folder: config.json + model.safetensors (+ vocab_map.json)
  --adapter NAME=DIR     load a PEFT LoRA adapter at start; requests select it with model: NAME
  --port P               default 8000 (0 = any free port); --host default 127.0.0.1
  --backend KIND         tfjs backend, default auto (gpu > node > wasm > cpu)
  --max-concurrency N    sequences decoded at once; default 8
  --batching MODE        on: one forward pass per step for all sequences (continuous batching,
                         chunked prefill); off: interleaved, one sequence per pass; auto (default):
                         on where the backend is batch-invariant (wasm, cpu), off elsewhere
  --max-num-batched-tokens N  batched: new positions per forward pass; default 256
  --block-size N         batched: prefill chunk and prefix-cache block, in positions; default 64
  --prefix-cache-mb MB   batched: prefix cache (KV of prompt blocks, per adapter, LRU); default
                         256, 0 = off
  --served-model-name    the base model's id in requests; default the --model path as given
  --api-key-env VAR      require "Authorization: Bearer $VAR" on /v1/* (the key is never logged)
  --api-key KEY          the same with the key itself (visible to other users in ps; prefer
                         --api-key-env). Without a key the server answers only requests whose
                         Host is 127.0.0.1 or localhost, and --host must be a loopback address
  --lora-root DIR        folders /v1/load_lora_adapter may load from (repeat; symlinks
                         resolved); default the working directory and the --adapter folders
  --max-prompt-bytes N   largest text prompt / chat messages, checked before tokenizing;
                         default 16 bytes per token of the model's context
  --max-choices N        most choices (prompts x n) per request; default 128

POST bodies must be JSON (Content-Type: application/json; anything else is 415), so a web
page cannot drive the server from a browser.

Reported logprobs are log-softmax of the raw logits (temperature 1, no top-p), i.e. what
the trainer computes for the same ids. Prints "listening on URL" once ready; SIGINT or
SIGTERM stops accepting, finishes in-flight requests, and exits.`;

const BACKENDS: readonly BackendKind[] = ['auto', 'gpu', 'node', 'wasm', 'cpu'];

function intOption(name: string, raw: string | undefined, def: number, min: number): number {
  if (raw === undefined) return def;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min) throw new InputError(`--${name} must be an integer >= ${min} but is "${raw}"`);
  return v;
}

function adapterOptions(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of list) {
    const eq = item.indexOf('=');
    if (eq <= 0 || eq === item.length - 1) throw new InputError(`--adapter must look like NAME=DIR but is "${item}"`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string' },
      adapter: { type: 'string', multiple: true },
      port: { type: 'string' },
      host: { type: 'string' },
      backend: { type: 'string' },
      'max-concurrency': { type: 'string' },
      batching: { type: 'string' },
      'max-num-batched-tokens': { type: 'string' },
      'block-size': { type: 'string' },
      'prefix-cache-mb': { type: 'string' },
      'served-model-name': { type: 'string' },
      'api-key-env': { type: 'string' },
      'api-key': { type: 'string' },
      'lora-root': { type: 'string', multiple: true },
      'max-prompt-bytes': { type: 'string' },
      'max-choices': { type: 'string' },
    },
  });
  if (!values.model) throw new InputError('--model DIR is required (a folder with config.json and model.safetensors)');
  const backend = (values.backend ?? 'auto') as BackendKind;
  if (!BACKENDS.includes(backend)) throw new InputError(`--backend must be one of ${BACKENDS.join(', ')} but is "${values.backend}"`);
  const batching = (values.batching ?? 'auto') as 'auto' | 'on' | 'off';
  if (!['auto', 'on', 'off'].includes(batching)) throw new InputError(`--batching must be one of auto, on, off but is "${values.batching}"`);
  const keyEnv = values['api-key-env'];
  if (keyEnv && values['api-key']) throw new InputError('--api-key-env and --api-key both give the key; pass one (--api-key-env keeps it out of ps)');
  const apiKey = keyEnv ? process.env[keyEnv] : values['api-key'];
  if (keyEnv && !apiKey) throw new InputError(`--api-key-env ${keyEnv}: the environment variable is not set; export it or drop the option`);
  if (apiKey !== undefined && apiKey.length < 16)
    throw new InputError(`the API key is ${apiKey.length} characters; use at least 16 (make one with: openssl rand -hex 32)`);
  const host = values.host ?? '127.0.0.1';
  checkServeBind(host, apiKey);
  for (const root of values['lora-root'] ?? [])
    if (!existsSync(root) || !statSync(root).isDirectory()) throw new InputError(`--lora-root ${root}: not a folder; give folders that hold adapters`);
  const server = await startServer({
    modelDir: values.model,
    servedModelName: values['served-model-name'],
    adapters: adapterOptions(values.adapter ?? []),
    host,
    port: intOption('port', values.port, 8000, 0),
    backend,
    maxConcurrency: intOption('max-concurrency', values['max-concurrency'], 8, 1),
    batching,
    maxBatchedTokens: intOption('max-num-batched-tokens', values['max-num-batched-tokens'], 256, 1),
    blockSize: intOption('block-size', values['block-size'], 64, 1),
    prefixCacheMb: intOption('prefix-cache-mb', values['prefix-cache-mb'], 256, 0),
    apiKey,
    ...(values['lora-root'] ? { loraRoots: values['lora-root'] } : {}),
    ...(values['max-prompt-bytes'] ? { maxPromptBytes: intOption('max-prompt-bytes', values['max-prompt-bytes'], 0, 1) } : {}),
    maxChoices: intOption('max-choices', values['max-choices'], 128, 1),
    log: (line) => console.error(`gsteer serve: ${line}`),
  });
  console.log(`gsteer serve: listening on ${server.url} (model "${server.modelName}")`);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) process.exit(130); // a second signal: stop now
      stopping = true;
      console.error(`gsteer serve: ${signal}, finishing in-flight requests`);
      server.close().then(
        () => resolve(0),
        (e) => {
          console.error(e);
          resolve(1);
        },
      );
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
}
