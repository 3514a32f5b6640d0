// method §7: at Stop, a teacher writes the refined query q* from the initial query and the
// final evidence state. Real runs use an LLM through the `openai` client (cfg.judge:
// baseUrl, model, apiKeyEnv); the embedded default is a documented template: the query
// followed by each covered slot's value phrased as a constraint, in slot order.
import OpenAI from 'openai';
import type { EvidenceSlot } from '../../core/types.ts';
import { InputError, TransientError } from '../../util/errors.ts';

export interface TeacherInput {
  query: string;
  profile: string;
  slots: readonly EvidenceSlot[];
}

export interface Teacher {
  readonly name: string;
  /** One line: the refined query q*. */
  refine(input: TeacherInput): Promise<string>;
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/**
 * The embedded teacher: `{query} Constraints from the user: {purpose}: {value}; ...` over
 * the covered (and partial) slots; the query alone when nothing is covered. Uncovered slots
 * add nothing (q* only states what the evidence supports).
 */
export function templateRefine({ query, slots }: TeacherInput): string {
  const known = slots.filter((s) => s.status !== 'uncovered' && s.value.trim());
  const q = oneLine(query);
  if (known.length === 0) return q;
  const body = known.map((s) => `${oneLine(s.purpose)}: ${oneLine(s.value)}`).join('; ');
  return `${q} Constraints from the user: ${body}.`;
}

export const templateTeacher: Teacher = { name: 'template', refine: async (i) => templateRefine(i) };

/** The prompt the LLM teacher gets (paper: "the teacher model refines the initial query using the final evidence state"). */
export function teacherMessages({ query, profile, slots }: TeacherInput): { role: 'system' | 'user'; content: string }[] {
  const known = slots.filter((s) => s.status !== 'uncovered' && s.value.trim());
  const evidence = known.length ? known.map((s) => `- ${s.name} (${s.purpose}): ${s.value} [${s.source}]`).join('\n') : '(none)';
  return [
    {
      role: 'system',
      content:
        'You rewrite a research request into a personalized research specification for a deep-research agent. ' +
        'Keep the original intent. Make every user-specific goal, constraint, preference and background fact from the ' +
        'evidence explicit. Use only the evidence given; never invent preferences. Answer with the rewritten request ' +
        'only, as one paragraph, no preamble.',
    },
    { role: 'user', content: `Original request: ${query}\nUser profile: ${profile || '(empty)'}\nEvidence about the user:\n${evidence}` },
  ];
}

export interface LlmTeacherOptions {
  baseUrl: string;
  model: string;
  apiKeyEnv: string;
  timeoutMs?: number;
  maxRetries?: number;
}

/** The LLM teacher over any OpenAI-compatible endpoint; a failed call is a TransientError (the client retried it already). */
export function llmTeacher(o: LlmTeacherOptions): Teacher {
  const client = new OpenAI({
    baseURL: o.baseUrl,
    apiKey: process.env[o.apiKeyEnv] ?? 'EMPTY', // local vLLM ignores it; the key is never logged
    timeout: o.timeoutMs ?? 60_000,
    maxRetries: o.maxRetries ?? 3,
  });
  return {
    name: `llm:${o.model}`,
    async refine(input) {
      let text: string;
      try {
        const r = await client.chat.completions.create({ model: o.model, messages: teacherMessages(input), temperature: 0 });
        text = r.choices[0]?.message?.content ?? '';
      } catch (e) {
        throw new TransientError(`teacher ${o.model} at ${o.baseUrl}: ${(e as Error).message}`);
      }
      // Qwen3 may prepend a think block; q* is what follows it, on one line (the grammar's EXECUTE).
      const out = oneLine(text.replace(/<think>[\s\S]*?<\/think>/g, ''));
      if (!out) throw new InputError(`teacher ${o.model} returned an empty refined query for "${input.query.slice(0, 60)}"; check the model or use judge.kind=rule`);
      return out;
    },
  };
}
