// Mistral-Interact (Qian et al. 2024, "Tell Me More!"; paper "Prior clarification": it
// "identifies underspecified instructions, elicits missing user intent, and returns the clarified
// goal as the final query"), run as its release runs it (OpenBMB/Tell_Me_More src/test_one_new.py):
// one raw text prompt, `<s>User: <system prompt>\n\nHere is the task:\n<task>\nAgent: `, each reply
// appended with "\n" and each user answer as `User: <answer>\nAgent: `, sent to /v1/completions.
// Its replies are tagged: `[INITIAL THOUGHT] ...` (first turn: vague or clear, missing details),
// `[INQUIRY THOUGHT] ... [INQUIRY] <question with options>`, or `[SUMMARY THOUGHT] ... [SUMMARY]
// <the user's goal in one or two sentences>`. Mapped: [INQUIRY] -> Ask (the inquiry), [SUMMARY]
// -> Stop (q* = the summary); a reply with neither is sampled again (its release retries 3 times),
// then the turn is invalid. The system prompt below restates its release's instructions and
// keeps the tags and step structure the checkpoint was fine-tuned on.
import type OpenAI from 'openai';
import type { ExternalBaselinesConfig } from '../../configs/baselines.ts';
import { BadReply, type Endpoint } from '../../endpoints/index.ts';
import type { DialogueTurn, ExternalAgent, ExternalTurn } from './agent.ts';

export const MISTRAL_INTERACT_SYSTEM = `You are an agent trying to understand user's goal and summarize it. Please first ask users for more specific details with options, and finally summarize the user's intention. Here are steps in detail.

--- Step 1: initial thought generation ---
1. Generate [INITIAL THOUGHT] about if the task is vague or clear and why.
2. List the important missing details and some according options if the task is vague.

--- Step 2: inquiry for more information if vague ---
1. If the task is vague, inquiry more details with options according to the list in [INITIAL THOUGHT].
2. Think what information you have and what to inquiry next in [INQUIRY THOUGHT].
3. Present your inquiry with options for user to choose after [INQUIRY], and be friendly.
4. You could repeat Step 2 for multiple times (but less than 5 times), or directly skip Step 2 if user task is clear initially.

--- Step 3: summarize user's intention ---
1. Make the summary once information is enough. You do not need to inquiry every missing details in [INITIAL THOUGHT].
2. List all the user's preferences and constraints in [SUMMARY THOUGHT]. The number of points should be same as rounds of chatting.
3. Give final summary after [SUMMARY] with comprehensive details in one or two sentences.`;

/** The raw prompt after the dialogue so far (each of the model's replies as it wrote it, then the user's answer). */
export function mistralInteractPrompt(query: string, dialogue: readonly DialogueTurn[]): string {
  let prompt = `<s>User: ${MISTRAL_INTERACT_SYSTEM}\n\nHere is the task:\n${query}\nAgent: `;
  for (const d of dialogue) prompt += `${d.raw.trim()}\nUser: ${d.answer}\nAgent: `;
  return prompt;
}

const between = (text: string, from: string, to?: string) => {
  const start = text.indexOf(from);
  if (start < 0) return '';
  const rest = text.slice(start + from.length);
  const end = to === undefined ? -1 : rest.indexOf(to);
  return (end < 0 ? rest : rest.slice(0, end)).trim();
};
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Map one reply (its release's parse): [SUMMARY] -> Stop, [INQUIRY] -> Ask, else null. */
export function parseMistralInteract(raw: string): ExternalTurn | null {
  if (raw.includes('[SUMMARY]')) {
    const q = oneLine(between(raw, '[SUMMARY]'));
    return q ? { action: 'STOP', execute: q, thought: oneLine(between(raw, '[SUMMARY THOUGHT]', '[SUMMARY]')), raw } : null;
  }
  if (raw.includes('[INQUIRY]')) {
    const q = oneLine(between(raw, '[INQUIRY]'));
    return q ? { action: 'ASK', execute: q, thought: oneLine(between(raw, '[INQUIRY THOUGHT]', '[INQUIRY]')), raw } : null;
  }
  return null;
}

export class MistralInteractAgent implements ExternalAgent {
  readonly label = 'Mistral-Interact';
  readonly model: string;

  constructor(
    private readonly c: ExternalBaselinesConfig['mistralInteract'],
    private readonly ep: Endpoint,
  ) {
    this.model = c.model;
  }

  async turn(query: string, dialogue: readonly DialogueTurn[], _last: boolean, seed: number): Promise<ExternalTurn> {
    const prompt = mistralInteractPrompt(query, dialogue);
    let raw = '';
    for (let attempt = 0; attempt < this.c.parseAttempts; attempt++) {
      raw = await this.complete(prompt, seed + attempt);
      const t = parseMistralInteract(raw);
      if (t) return t;
    }
    return { action: 'INVALID', detail: `no [INQUIRY] or [SUMMARY] in ${this.c.parseAttempts} replies`, raw };
  }

  private complete(prompt: string, seed: number): Promise<string> {
    const body = {
      model: this.c.model,
      prompt,
      max_tokens: this.c.maxTokens,
      temperature: this.c.temperature,
      top_p: this.c.topP,
      repetition_penalty: this.c.repetitionPenalty,
      seed,
      stop: ['\nUser:', '</s>'],
    };
    return this.ep.request('completions', async (client: OpenAI) => {
      const r = (await client.completions.create(body as unknown as OpenAI.CompletionCreateParamsNonStreaming)) as OpenAI.Completion;
      const choice = r.choices[0];
      if (!choice) throw new BadReply('empty', 'no choice in the completion', null);
      const usage = r.usage ? { promptTokens: r.usage.prompt_tokens, completionTokens: r.usage.completion_tokens } : null;
      return { value: choice.text ?? '', usage };
    });
  }
}
