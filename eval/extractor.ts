// method §8: the factor extractor reads the user-specific framing factors out of a refined
// query q*. One interface, two implementations: an LLM through the `openai` client
// (extractor-llm.ts; GPT-5.4 in the paper) and an embedded rule-based one
// (extractor-rule.ts). The instance is passed so an extractor may drop what merely
// restates the original query; the targets must never be read (they are what is scored).
import type { Instance } from '../data/schema.ts';

export interface FactorExtractor {
  readonly name: string;
  /** The factors expressed in q*, each a short phrase; [] when there are none. */
  extract(refinedQuery: string, instance: Pick<Instance, 'id' | 'query'>): Promise<string[]>;
}
