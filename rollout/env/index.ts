// The environment a config picks (`env: gsteer | qref`, method §13).
import type { RunConfig } from '../../configs/schema.ts';
import type { Environment } from './types.ts';

export async function environmentOf(cfg: RunConfig): Promise<Environment> {
  switch (cfg.env) {
    case 'gsteer':
      return (await import('./gsteer.ts')).gsteerEnv(cfg);
    case 'qref':
      return (await import('../qref/env.ts')).qrefEnv(cfg);
    default: {
      const never: never = cfg.env;
      throw new Error(`internal: unknown environment ${String(never)}`);
    }
  }
}

export type { Environment, EnvInstance } from './types.ts';
