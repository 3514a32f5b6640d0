// Where evaluation episodes get their policy (method §9): the embedded server (serve/, over
// policy.model, started here and closed after) or an external OpenAI-compatible server
// (vLLM) at policy.baseUrl. `--adapter DIR` loads a PEFT adapter under ADAPTER_NAME (at
// start on the embedded server; through /v1/load_lora_adapter on an external one) and
// requests name it; `--policy-model NAME` names the model directly (a base model, or an
// adapter the server already has); neither = the base model.
import type { RunConfig } from '../configs/schema.ts';
import type { CallSink } from '../endpoints/index.ts';
import { policyClientFrom } from '../rollout/from-config.ts';
import type { PolicyClient } from '../rollout/policy-client.ts';
import { InputError } from '../util/errors.ts';

export const ADAPTER_NAME = 'gsteer-eval';

export interface PolicyEndpoint {
  client: PolicyClient;
  baseUrl: string;
  model: string;
  close(): Promise<void>;
}

export interface PolicyChoice {
  adapter?: string;
  policyModel?: string;
  log?: (line: string) => void;
  /** Where the policy client's call records go (RUN/eval/llm_calls.jsonl). */
  calls?: CallSink;
}

export async function openPolicy(cfg: RunConfig, choice: PolicyChoice): Promise<PolicyEndpoint> {
  if (choice.adapter && choice.policyModel)
    throw new InputError(
      '--adapter and --policy-model both name the policy; pass one (--adapter DIR loads a PEFT folder, --policy-model NAME uses a model the server has)',
    );
  const p = cfg.policy;
  if (p.server === 'embedded') {
    const { startServer } = await import('../serve/server.ts');
    const server = await startServer({
      modelDir: p.model,
      adapters: choice.adapter ? { [ADAPTER_NAME]: choice.adapter } : {},
      port: p.port,
      backend: cfg.trainer.backend,
      ...(choice.log ? { log: choice.log } : {}),
      logRequests: false, // the eval's progress bar says how far it is; errors still reach `log`
    });
    const baseUrl = `${server.url}/v1`;
    const model = choice.adapter ? ADAPTER_NAME : (choice.policyModel ?? server.modelName);
    return { client: policyClientFrom(cfg, baseUrl, choice.calls), baseUrl, model, close: () => server.close() };
  }
  const baseUrl = p.baseUrl as string; // configs/schema.ts: required when server = external
  if (choice.adapter) {
    const { loadAdapter } = await import('../workers/policy-admin.ts');
    const key = process.env[p.apiKeyEnv];
    await loadAdapter(baseUrl, ADAPTER_NAME, choice.adapter, { maxRetries: p.maxRetries, timeoutMs: p.timeoutMs, ...(key ? { apiKey: key } : {}) });
  }
  const model = choice.adapter ? ADAPTER_NAME : (choice.policyModel ?? p.model);
  return { client: policyClientFrom(cfg, baseUrl, choice.calls), baseUrl, model, close: async () => {} };
}
