// Building the rollout environment's parts from the run config (configs/schema.ts), so
// workers and CLI commands wire them the same way. Embedded defaults need no network.
import type { Redis } from 'ioredis';
import type { RunConfig } from '../configs/schema.ts';
import type { Encoder } from '../core/encoder.ts';
import { InputError } from '../util/errors.ts';
import { LlmJudge } from './judge-llm.ts';
import { RuleJudge } from './judge-rule.ts';
import type { MemoryJudge } from './memory-judge.ts';
import { OpenAIPolicyClient, type PolicyClient } from './policy-client.ts';
import { LlmSimulator } from './simulator-llm.ts';
import { SeedSimulator } from './simulator-seed.ts';
import type { UserSimulator } from './simulator.ts';
import { RedisUserStore } from './user-store-redis.ts';

/** `baseUrl`: policy.baseUrl for an external server, or the URL the embedded server listens on. */
export function policyClientFrom(cfg: RunConfig, baseUrl = cfg.policy.baseUrl): PolicyClient {
  if (!baseUrl) throw new InputError('no policy server URL: set policy.baseUrl (external server) or start the embedded one (gsteer serve) and pass its URL');
  return new OpenAIPolicyClient({ baseUrl, apiKeyEnv: cfg.policy.apiKeyEnv, timeoutMs: cfg.policy.timeoutMs, maxRetries: cfg.policy.maxRetries });
}

export function simulatorFrom(cfg: RunConfig, encoder: Encoder): UserSimulator {
  const s = cfg.simulator;
  switch (s.kind) {
    case 'embedded':
      return new SeedSimulator(encoder, s.answerThreshold);
    case 'llm':
      // configs/schema.ts guarantees baseUrl when kind = llm
      return new LlmSimulator({ baseUrl: s.baseUrl as string, apiKeyEnv: s.apiKeyEnv, timeoutMs: s.timeoutMs, maxRetries: s.maxRetries, model: s.model, temperature: s.temperature });
    default: {
      const never: never = s.kind;
      throw new Error(`internal: simulator kind ${String(never)}`);
    }
  }
}

export function judgeFrom(cfg: RunConfig, encoder: Encoder): MemoryJudge {
  const j = cfg.judge;
  switch (j.kind) {
    case 'rule':
      return new RuleJudge(encoder);
    case 'llm':
      // The judge shares the simulator's timeout and retry budget (same kind of server).
      return new LlmJudge({ baseUrl: j.baseUrl as string, apiKeyEnv: j.apiKeyEnv, model: j.model, timeoutMs: cfg.simulator.timeoutMs, maxRetries: cfg.simulator.maxRetries });
    default: {
      const never: never = j.kind;
      throw new Error(`internal: judge kind ${String(never)}`);
    }
  }
}

export function userStoreFrom(cfg: RunConfig, redis: Redis, encoder: Encoder, runId = cfg.runName): RedisUserStore {
  return new RedisUserStore(redis, encoder, { prefix: cfg.queues.prefix, runId });
}
