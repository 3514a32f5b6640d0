// The factor extractor named by the run config (eval.extractor; method §8).
import type { EvalConfig } from '../configs/schema.ts';
import type { FactorExtractor } from './extractor.ts';
import { LlmFactorExtractor } from './extractor-llm.ts';
import { RuleFactorExtractor } from './extractor-rule.ts';

export function extractorFrom(cfg: EvalConfig['extractor'], log?: (msg: string) => void): FactorExtractor {
  switch (cfg.kind) {
    case 'rule':
      return new RuleFactorExtractor();
    case 'llm':
      // configs/schema.ts guarantees baseUrl when kind = llm
      return new LlmFactorExtractor({ baseUrl: cfg.baseUrl as string, apiKeyEnv: cfg.apiKeyEnv, timeoutMs: cfg.timeoutMs, maxRetries: cfg.maxRetries, model: cfg.model, ...(log ? { log } : {}) });
    default: {
      const never: never = cfg.kind;
      throw new Error(`internal: extractor kind ${String(never)}`);
    }
  }
}
