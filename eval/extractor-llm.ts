// The LLM factor extractor (method §8; paper: GPT-5.4 with a fixed prompt, each q* submitted
// once, structured output) through the `openai` client. The reply must be exactly one JSON
// list of strings (a <think> block and ``` fences are removed first, llm-json.ts). Anything
// else (prose, an object, a non-string entry) is malformed: the query gets NO factors and
// the problem is logged, so a bad reply costs recall instead of crashing an evaluation.
// Transport errors are retried (openai-retry.ts) and then thrown.
import type OpenAI from 'openai';
import type { Instance } from '../data/schema.ts';
import { stripThinking } from '../rollout/llm-json.ts';
import { endpointUrl, openaiClient, type EndpointConfig } from '../rollout/openai-client.ts';
import { withRetries } from '../rollout/openai-retry.ts';
import type { ChatMessage } from '../core/tokenizer.ts';
import type { FactorExtractor } from './extractor.ts';

export const EXTRACTOR_SYSTEM_PROMPT = `You analyze refined research queries written for a deep-research agent.
List the user-specific framing factors the refined query expresses: goals, constraints, preferences, background and evaluation criteria of this particular user that would change how the research is done.
Do not list the generic topic or task of the original request, and do not list anything the refined query does not state.
Write each factor as one short, self-contained phrase that includes its value (e.g. "budget under 1200 EUR").
Reply with one JSON list of strings and nothing else, e.g. ["factor one", "factor two"]; reply [] if there are none.`;

export function extractorMessages(refinedQuery: string, originalQuery: string): ChatMessage[] {
  return [
    { role: 'system', content: EXTRACTOR_SYSTEM_PROMPT },
    { role: 'user', content: `ORIGINAL REQUEST: ${originalQuery}\nREFINED QUERY: ${refinedQuery}` },
  ];
}

/** Strict reading of the reply: a JSON list of strings; `error` says what was wrong. */
export function readFactorList(content: string | null | undefined): { factors: string[] } | { error: string } {
  let body = stripThinking(content ?? '');
  const fence = /^```(?:json)?\s*\n?([\s\S]*?)\n?```$/.exec(body);
  if (fence) body = (fence[1] ?? '').trim();
  if (!body) return { error: 'empty reply' };
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch (e) {
    return { error: `not JSON (${(e as Error).message}): ${JSON.stringify(body.slice(0, 120))}` };
  }
  if (!Array.isArray(v)) return { error: `expected a JSON list of strings, got ${v === null ? 'null' : typeof v}` };
  const bad = v.findIndex((x) => typeof x !== 'string');
  if (bad >= 0) return { error: `entry ${bad} is ${JSON.stringify(v[bad])}, not a string` };
  const seen = new Set<string>();
  const factors: string[] = [];
  for (const raw of v as string[]) {
    const f = raw.replace(/\s+/g, ' ').trim();
    if (!f || seen.has(f.toLowerCase())) continue; // empty and repeated factors say nothing new
    seen.add(f.toLowerCase());
    factors.push(f);
  }
  return { factors };
}

export interface LlmExtractorConfig extends EndpointConfig {
  model: string;
  maxRetries: number;
  retryBaseMs?: number;
  log?: (msg: string) => void;
}

export class LlmFactorExtractor implements FactorExtractor {
  readonly name: string;
  private readonly client: OpenAI;
  private readonly url: string;

  constructor(private readonly cfg: LlmExtractorConfig) {
    this.name = `llm:${cfg.model}`;
    this.client = openaiClient(cfg);
    this.url = endpointUrl(cfg.baseUrl, 'chat/completions');
  }

  async extract(refinedQuery: string, instance: Pick<Instance, 'id' | 'query'>): Promise<string[]> {
    const res = await withRetries(
      () => this.client.chat.completions.create({ model: this.cfg.model, messages: extractorMessages(refinedQuery, instance.query), temperature: 0, max_tokens: 1024 }),
      { maxRetries: this.cfg.maxRetries, baseDelayMs: this.cfg.retryBaseMs, what: `factor extractor ${this.url}` },
    );
    const reply = readFactorList(res.choices[0]?.message?.content);
    if ('error' in reply) {
      (this.cfg.log ?? ((m: string) => console.warn(m)))(`factor extractor ${this.url}: malformed reply for instance ${instance.id} (${reply.error}); scoring it with no factors`);
      return [];
    }
    return reply.factors;
  }
}
