// The LLM factor extractor (method §8; paper: GPT-5.4 with a fixed prompt, each q* submitted
// once, structured output) through the endpoints/ layer: the reply is asked for with a JSON
// schema ({"factors": [...]}, factorListSchema) and must be exactly that (thinking and ```
// fences removed first). Anything else (prose, a bare list, a non-string entry, a cut reply)
// is a refused reply, retried; when every attempt is refused the query gets NO factors and
// the problem is logged, so a bad reply costs recall instead of crashing an evaluation.
// Transport errors are retried (429 with Retry-After, 5xx) and then thrown.
import { z } from 'zod';
import type { Instance } from '../data/schema.ts';
import { ReplyError, type Endpoint } from '../endpoints/index.ts';
import type { ChatMessage } from '../core/tokenizer.ts';
import type { FactorExtractor } from './extractor.ts';

export const EXTRACTOR_SYSTEM_PROMPT = `You analyze refined research queries written for a deep-research agent.
List the user-specific framing factors the refined query expresses: goals, constraints, preferences, background and evaluation criteria of this particular user that would change how the research is done.
Do not list the generic topic or task of the original request, and do not list anything the refined query does not state.
Write each factor as one short, self-contained phrase that includes its value (e.g. "budget under 1200 EUR").
Reply with one JSON object and nothing else, e.g. {"factors": ["factor one", "factor two"]}; reply {"factors": []} if there are none.`;

export function extractorMessages(refinedQuery: string, originalQuery: string): ChatMessage[] {
  return [
    { role: 'system', content: EXTRACTOR_SYSTEM_PROMPT },
    { role: 'user', content: `ORIGINAL REQUEST: ${originalQuery}\nREFINED QUERY: ${refinedQuery}` },
  ];
}

/**
 * The reply's schema: {"factors": [string, ...]} (the root is an object because OpenAI's
 * structured outputs accept only an object at the root); factors are trimmed, blank and
 * repeated ones (case-insensitive) dropped: they say nothing new.
 */
export const factorListSchema = z
  .object({ factors: z.array(z.string()) })
  .strict()
  .transform(({ factors }) => {
    const seen = new Set<string>();
    const out: string[] = [];
    for (const raw of factors) {
      const f = raw.replace(/\s+/g, ' ').trim();
      if (!f || seen.has(f.toLowerCase())) continue;
      seen.add(f.toLowerCase());
      out.push(f);
    }
    return out;
  });

export interface LlmExtractorConfig {
  /** The extractor endpoint (role "extractor"). */
  endpoint: Endpoint;
  maxTokens: number;
  log?: (msg: string) => void;
}

export class LlmFactorExtractor implements FactorExtractor {
  readonly name: string;

  constructor(private readonly cfg: LlmExtractorConfig) {
    this.name = `llm:${cfg.endpoint.options.model}`;
  }

  async extract(refinedQuery: string, instance: Pick<Instance, 'id' | 'query'>): Promise<string[]> {
    const req = { messages: extractorMessages(refinedQuery, instance.query), temperature: 0, maxTokens: this.cfg.maxTokens };
    try {
      return (await this.cfg.endpoint.chatJson(req, { name: 'framing_factors', schema: factorListSchema })).value;
    } catch (e) {
      if (!(e instanceof ReplyError)) throw e; // transport failures after every retry
      (this.cfg.log ?? ((m: string) => console.warn(m)))(
        `factor extractor: no acceptable reply for instance ${instance.id} (${e.message}); scoring it with no factors`,
      );
      return [];
    }
  }
}
