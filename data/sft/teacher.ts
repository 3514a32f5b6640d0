// method §7: at Stop, a teacher writes the refined query q* from the initial query and the
// final evidence state. Real runs use an LLM through the endpoints/ layer (cfg.judge's
// server, role "teacher"); the embedded default is a documented template: the query
// followed by each covered slot's value phrased as a constraint, in slot order.
import { NON_COMMITTAL, type EvidenceSlot } from '../../core/types.ts';
import type { Endpoint } from '../../endpoints/index.ts';
import { llmTurnRenderer, type RenderedTurn, type TurnRenderInput } from './render.ts';
import { InputError } from '../../util/errors.ts';

export interface TeacherInput {
  query: string;
  profile: string;
  slots: readonly EvidenceSlot[];
  /**
   * The dialogue's question-answer pairs: the IntentRL-style clarifier's evidence (it tracks no
   * slots, so q* is written from the answers it got; method §8.5). Absent or empty for G-STEER.
   */
  dialogue?: readonly DialogueTurn[];
}

export interface DialogueTurn {
  question: string;
  answer: string;
}

export interface Teacher {
  readonly name: string;
  /** One line: the refined query q*. */
  refine(input: TeacherInput): Promise<string>;
  /** Plan (every turn) and Execute (Retrieve, Ask) written by the teacher (render.ts); absent: the templates. */
  turn?(input: TurnRenderInput): Promise<RenderedTurn>;
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** The answers that carry evidence: non-blank and not the simulator's non-committal line. */
export const informativeAnswers = (dialogue: readonly DialogueTurn[] = []): DialogueTurn[] =>
  dialogue.filter((d) => d.answer.trim() && d.answer.trim() !== NON_COMMITTAL);

/**
 * The embedded teacher: `{query} Constraints from the user: {purpose}: {value}; ...` over
 * the covered (and partial) slots, then `From the user's answers: {answer}; ...` over the
 * dialogue's informative answers (the clarifier's evidence); the query alone when there is
 * neither. Uncovered slots add nothing (q* only states what the evidence supports).
 */
export function templateRefine({ query, slots, dialogue }: TeacherInput): string {
  const known = slots.filter((s) => s.status !== 'uncovered' && s.value.trim());
  const answers = informativeAnswers(dialogue);
  const parts = [oneLine(query)];
  if (known.length) parts.push(`Constraints from the user: ${known.map((s) => `${oneLine(s.purpose)}: ${oneLine(s.value)}`).join('; ')}.`);
  if (answers.length) parts.push(`From the user's answers: ${answers.map((d) => oneLine(d.answer).replace(/[.;]+$/, '')).join('; ')}.`);
  return parts.join(' ');
}

export const templateTeacher: Teacher = { name: 'template', refine: async (i) => templateRefine(i) };

/** The prompt the LLM teacher gets (paper: "the teacher model refines the initial query using the final evidence state"). */
export function teacherMessages({ query, profile, slots, dialogue }: TeacherInput): { role: 'system' | 'user'; content: string }[] {
  const known = slots.filter((s) => s.status !== 'uncovered' && s.value.trim());
  const lines = [
    ...known.map((s) => `- ${s.name} (${s.purpose}): ${s.value} [${s.source}]`),
    ...informativeAnswers(dialogue).map((d) => `- asked "${oneLine(d.question)}", the user answered: ${oneLine(d.answer)} [dialogue]`),
  ];
  const evidence = lines.length ? lines.join('\n') : '(none)';
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
  /** The teacher endpoint (role "teacher"; the judge's server in configs). */
  endpoint: Endpoint;
  maxTokens: number;
}

/**
 * The LLM teacher over any OpenAI-compatible endpoint (endpoints/: retry rule, thinking off
 * for Qwen3, a reply cut at max_tokens or inside <think> refused and retried). A call that
 * fails every attempt throws (TransientError / ReplyError): no q* is made up.
 */
export function llmTeacher(o: LlmTeacherOptions): Teacher {
  const { model } = o.endpoint.options;
  return {
    name: `llm:${model}`,
    turn: llmTurnRenderer(o.endpoint, o.maxTokens),
    async refine(input) {
      const r = await o.endpoint.chat({ messages: teacherMessages(input), temperature: 0, maxTokens: o.maxTokens });
      // q* on one line (the grammar's EXECUTE); thinking was removed by endpoints/.
      const out = oneLine(r.text);
      if (!out)
        throw new InputError(`teacher ${model} returned an empty refined query for "${input.query.slice(0, 60)}"; check the model or use judge.kind=rule`);
      return out;
    },
  };
}
