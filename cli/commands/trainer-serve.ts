// `gsteer trainer serve`: gsteer's tfjs trainer behind the Tinker API (trainer/service/), so the
// official Tinker SDK, gsteer's own client and any Tinker user can train LoRAs on a local base:
// one TfjsEngine per create_model over one shared base model, states under --state-dir, and
// sampling by serve/'s engine over the same base (trainer-sampler.ts).
import { parseArgs } from 'node:util';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import { loadModel } from '../../model/index.ts';
import { EVERY_GRAMMAR } from '../../rollout/env/grammars.ts';
import { TfjsEngine } from '../../trainer/engine/tfjs-engine.ts';
import { startTrainerService } from '../../trainer/service/server.ts';
import type { LoraSpec } from '../../trainer/service/types.ts';
import { InputError } from '../../util/errors.ts';
import { serveSampler } from './trainer-sampler.ts';

export const usage = `usage: gsteer trainer serve --model DIR [--state-dir DIR] [--port P] [--host H]
                           [--backend auto|gpu|node|wasm|cpu] [--served-model-name NAME]
                           [--api-key-env VAR] [--micro-batch-size N] [--recompute]
                           [--lora-alpha A] [--compress on|off] [--session-timeout-s S]
                           [--tokenizer-id ID] [--no-sampler] [--log-requests]

The Tinker API (the 0.25 SDK's routes under /api/v1: sessions and heartbeats, create_model,
forward / forward_backward (protobuf, zstd, or JSON), optim_step, save_weights / load_weights
with or without the optimizer, save_weights_for_sampler, weights_info, sampling sessions and
asample, retrieve_future) over gsteer's tfjs trainer (trainer/tinker/README.md).

  --model DIR            the base: config.json + model.safetensors (+ vocab_map.json)
  --state-dir DIR        where tinker://<model>/weights/<name> and .../sampler_weights/<name>
                         are kept; default runs/trainer-service
  --port P               default 8001 (0 = any free port); --host default 127.0.0.1
  --backend KIND         tfjs backend, default auto (gpu > node > wasm > cpu)
  --served-model-name    the base_model name clients send; default the --model path as given
  --api-key-env VAR      require X-API-Key: $VAR (the key is never logged)
  --micro-batch-size N   datums per forward/backward pass inside a call; default 4
  --recompute            per-layer activation recomputation (less memory, same gradients)
  --lora-alpha A         PEFT lora_alpha when create_model sends none (gsteer's extension
                         create_model.gsteer.lora_alpha); not in the Tinker contract; default 32
  --compress on|off      ask SDK clients to zstd their forward_backward bodies; default on
  --session-timeout-s S  end a session (unload its models) after S s without a heartbeat;
                         default 600, 0 = never
  --tokenizer-id ID      get_info's tokenizer_id; default Qwen/Qwen3-8B (the Qwen3 family's)
  --no-sampler           no sampling routes (saves the sampler's memory)

LoRA: Tinker's train_attn / train_mlp pick q,k,v,o / gate,up,down; train_unembed is not
applied (gsteer's LoRA covers the attention and MLP projections only). Sampled logprobs are
raw (temperature 1) under the saved adapter: what forward returns for the same ids.
Prints "listening on URL" once ready; SIGINT or SIGTERM finishes in-flight calls and exits.`;

const BACKENDS: readonly BackendKind[] = ['auto', 'gpu', 'node', 'wasm', 'cpu'];

function num(name: string, raw: string | undefined, def: number, ok: (v: number) => boolean, rule: string): number {
  if (raw === undefined) return def;
  const v = Number(raw);
  if (!ok(v)) throw new InputError(`--${name} must be ${rule} but is "${raw}"`);
  return v;
}

/** Tinker's LoraConfig (+ gsteer's fields) as gsteer's LoRA config. */
export function peftLora(
  l: LoraSpec,
  defaultAlpha: number,
): { r: number; alpha: number; dropout: number; targetModules: ('q_proj' | 'k_proj' | 'v_proj' | 'o_proj' | 'gate_proj' | 'up_proj' | 'down_proj')[] } {
  const attn = ['q_proj', 'k_proj', 'v_proj', 'o_proj'] as const;
  const mlp = ['gate_proj', 'up_proj', 'down_proj'] as const;
  const all: readonly string[] = [...attn, ...mlp];
  const targets = l.targetModules ?? [...(l.trainAttn ? attn : []), ...(l.trainMlp ? mlp : [])];
  const bad = targets.find((t) => !all.includes(t));
  if (bad) throw new InputError(`create_model.gsteer.target_modules has "${bad}"; gsteer's LoRA targets ${all.join(', ')}`);
  if (!targets.length)
    throw new InputError(
      'create_model.lora_config: train_attn and train_mlp are both false; gsteer trains LoRA on attention and/or MLP projections (train_unembed alone is not supported)',
    );
  return { r: l.rank, alpha: l.alpha ?? defaultAlpha, dropout: l.dropout ?? 0, targetModules: targets as ReturnType<typeof peftLora>['targetModules'] };
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string' },
      'state-dir': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      backend: { type: 'string' },
      'served-model-name': { type: 'string' },
      'api-key-env': { type: 'string' },
      'micro-batch-size': { type: 'string' },
      recompute: { type: 'boolean' },
      'lora-alpha': { type: 'string' },
      compress: { type: 'string' },
      'session-timeout-s': { type: 'string' },
      'tokenizer-id': { type: 'string' },
      'no-sampler': { type: 'boolean' },
      'log-requests': { type: 'boolean' },
    },
  });
  if (!values.model) throw new InputError('--model DIR is required (a folder with config.json and model.safetensors)');
  const backend = (values.backend ?? 'auto') as BackendKind;
  if (!BACKENDS.includes(backend)) throw new InputError(`--backend must be one of ${BACKENDS.join(', ')} but is "${values.backend}"`);
  if (values.compress !== undefined && !['on', 'off'].includes(values.compress))
    throw new InputError(`--compress must be on or off but is "${values.compress}"`);
  const keyEnv = values['api-key-env'];
  const apiKey = keyEnv ? process.env[keyEnv] : undefined;
  if (keyEnv && !apiKey) throw new InputError(`--api-key-env ${keyEnv}: the environment variable is not set; export it or drop the option`);
  const port = num('port', values.port, 8001, (v) => Number.isInteger(v) && v >= 0 && v < 65536, 'an integer in [0, 65535]');
  const microBatchSize = num('micro-batch-size', values['micro-batch-size'], 4, (v) => Number.isInteger(v) && v >= 1, 'an integer >= 1');
  const alpha = num('lora-alpha', values['lora-alpha'], 32, (v) => v > 0, 'a number > 0');
  const timeoutS = num('session-timeout-s', values['session-timeout-s'], 600, (v) => v >= 0, 'a number of seconds >= 0');
  const log = (line: string) => console.error(`gsteer trainer serve: ${line}`);

  const backendName = await selectBackend(backend, log);
  const model = await loadModel(values.model);
  const baseModel = values['served-model-name'] ?? values.model;
  const svc = await startTrainerService({
    baseModel,
    maxContextLength: model.config.maxPositionEmbeddings,
    tokenizerId: values['tokenizer-id'] ?? 'Qwen/Qwen3-8B',
    arch: 'qwen3',
    stateDir: values['state-dir'] ?? 'runs/trainer-service',
    host: values.host ?? '127.0.0.1',
    port,
    apiKey,
    compressForwardBackward: values.compress !== 'off',
    sessionTimeoutMs: timeoutS * 1000,
    createEngine: async ({ lora }) =>
      TfjsEngine.create(model, peftLora(lora, alpha), lora.seed, {
        baseModel: values.model as string,
        microBatchSize,
        recompute: values.recompute ?? false,
        grammars: EVERY_GRAMMAR,
      }),
    sampler: values['no-sampler'] ? undefined : serveSampler(model, backendName),
    log,
    logRequests: values['log-requests'] ?? false,
  });
  console.log(`gsteer trainer serve: listening on ${svc.url} (base model "${baseModel}", tfjs backend ${backendName})`);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) process.exit(130);
      stopping = true;
      log(`${signal}, finishing in-flight calls`);
      svc.close().then(
        () => {
          model.dispose();
          resolve(0);
        },
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
