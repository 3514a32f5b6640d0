// The factor extractor named by the run config (eval.extractor; method §8).
import { endpointOptions } from '../configs/endpoints.ts';
import type { EvalConfig } from '../configs/schema.ts';
import { createEndpoint, type CallSink } from '../endpoints/index.ts';
import type { FactorExtractor } from './extractor.ts';
import { LlmFactorExtractor } from './extractor-llm.ts';
import { RuleFactorExtractor } from './extractor-rule.ts';

export function extractorFrom(cfg: EvalConfig['extractor'], log?: (msg: string) => void, sink?: CallSink): FactorExtractor {
  switch (cfg.kind) {
    case 'rule':
      return new RuleFactorExtractor();
    case 'llm':
      // configs/schema.ts guarantees baseUrl when kind = llm
      return new LlmFactorExtractor({
        endpoint: createEndpoint(endpointOptions('extractor', cfg), sink ? { sink } : {}),
        maxTokens: cfg.maxTokens,
        ...(log ? { log } : {}),
      });
    default: {
      const never: never = cfg.kind;
      throw new Error(`internal: extractor kind ${String(never)}`);
    }
  }
}
