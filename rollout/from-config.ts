// Building the rollout environment's parts from the run config (configs/schema.ts), so
// workers and CLI commands wire them the same way. Embedded defaults need no network.
import type { RedisClient } from '../util/redis.ts';
import { endpointOptions } from '../configs/endpoints.ts';
import type { RunConfig } from '../configs/schema.ts';
import type { Encoder } from '../core/encoder.ts';
import { createEndpoint, type CallSink } from '../endpoints/index.ts';
import { InputError } from '../util/errors.ts';
import { LlmJudge } from './judge-llm.ts';
import { RuleJudge } from './judge-rule.ts';
import type { MemoryJudge } from './memory-judge.ts';
import { OpenAIPolicyClient, type PolicyClient } from './policy-client.ts';
import { LlmSimulator } from './simulator-llm.ts';
import { SeedSimulator } from './simulator-seed.ts';
import { LateActivation, type UserSimulator } from './simulator.ts';
import { RedisUserStore } from './user-store-redis.ts';

const depsOf = (sink?: CallSink) => (sink ? { sink } : {});

/**
 * `baseUrl`: policy.baseUrl for an external server, or the URL the embedded server listens on.
 * `sink` (here and below): where the endpoint's call records go (the run's llm_calls.jsonl).
 */
export function policyClientFrom(cfg: RunConfig, baseUrl = cfg.policy.baseUrl, sink?: CallSink): PolicyClient {
  if (!baseUrl) throw new InputError('no policy server URL: set policy.baseUrl (external server) or start the embedded one (gsteer serve) and pass its URL');
  // The policy is prompted with token ids on /v1/completions: no chat template, nothing to switch off.
  const o = endpointOptions('policy', { ...cfg.policy, model: cfg.policy.model, chatTemplateKwargs: null }, baseUrl);
  return new OpenAIPolicyClient(createEndpoint(o, depsOf(sink)));
}

export function simulatorFrom(cfg: RunConfig, encoder: Encoder, sink?: CallSink): UserSimulator {
  const s = cfg.simulator;
  switch (s.kind) {
    case 'embedded':
      return new SeedSimulator(encoder, s.answerThreshold, s.memoryThreshold);
    case 'llm':
      // configs/schema.ts guarantees baseUrl when kind = llm
      return new LlmSimulator({
        endpoint: createEndpoint(endpointOptions('simulator', s), depsOf(sink)),
        temperature: s.temperature,
        topP: s.topP,
        maxTokens: s.maxTokens,
        activation: new LateActivation(encoder, s.memoryThreshold),
      });
    default: {
      const never: never = s.kind;
      throw new Error(`internal: simulator kind ${String(never)}`);
    }
  }
}

export function judgeFrom(cfg: RunConfig, encoder: Encoder, sink?: CallSink): MemoryJudge {
  const j = cfg.judge;
  switch (j.kind) {
    case 'rule':
      return new RuleJudge(encoder);
    case 'llm':
      return new LlmJudge({ endpoint: createEndpoint(endpointOptions('judge', j), depsOf(sink)), temperature: j.temperature, maxTokens: j.maxTokens });
    default: {
      const never: never = j.kind;
      throw new Error(`internal: judge kind ${String(never)}`);
    }
  }
}

export function userStoreFrom(cfg: RunConfig, redis: RedisClient, encoder: Encoder, runId = cfg.runName): RedisUserStore {
  return new RedisUserStore(redis, encoder, { prefix: cfg.queues.prefix, runId });
}
