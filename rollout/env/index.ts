// The environment a config picks (`env: gsteer | qref`, method §13).
import type { RunConfig } from '../../configs/schema.ts';
import type { CallSink } from '../../endpoints/index.ts';
import type { Environment } from './types.ts';

/** `sink`: where the environment's LLM calls are recorded (the run's llm_calls.jsonl). */
export async function environmentOf(cfg: RunConfig, sink?: CallSink): Promise<Environment> {
  switch (cfg.env) {
    case 'gsteer':
      return (await import('./gsteer.ts')).gsteerEnv(cfg, sink);
    case 'qref':
      return (await import('../qref/env.ts')).qrefEnv(cfg, sink);
    default: {
      const never: never = cfg.env;
      throw new Error(`internal: unknown environment ${String(never)}`);
    }
  }
}

export type { Environment, EnvInstance } from './types.ts';
