// The LLM-backed user simulator (method §3; paper, "User Simulator": Qwen3-32B). It sees the
// persona and the active targets with their seed Q/A (never shown to the policy), picks the
// most relevant target for the question, answers only what is asked, grounded in the seed
// answer and persona, and gives a brief non-committal reply when nothing supports an
// answer. Reply format: one JSON object {"target_id": "<id>" | null, "answer": "<text>"}.
// A malformed reply is used as plain text with target null (and logged); an empty one
// becomes the non-committal line: a simulator hiccup must not kill the episode.
import type OpenAI from 'openai';
import { personaLines } from '../data/persona.ts';
import type { Instance, Target } from '../data/schema.ts';
import { parseJsonObject, stripThinking } from './llm-json.ts';
import { endpointUrl, openaiClient, type EndpointConfig } from './openai-client.ts';
import { withRetries } from './openai-retry.ts';
import { activeTargets, NON_COMMITTAL, type DialogueSoFar, type SimulatorAnswer, type UserSimulator } from './simulator.ts';
import type { ChatMessage } from '../core/tokenizer.ts';

export interface LlmSimulatorConfig extends EndpointConfig {
  model: string;
  temperature: number;
  maxRetries: number;
  retryBaseMs?: number;
  maxTokens?: number; // default 256: answers are one or two sentences
  log?: (msg: string) => void;
}

export function simulatorSystemPrompt(instance: Instance, targets: readonly Target[]): string {
  const facts = personaLines(instance.persona);
  const persona = facts.length ? facts.map((f) => `- ${f}`).join('\n') : '- (no further facts)';
  const tgt = targets.length
    ? targets.map((t) => `- id: ${t.id}\n  about: ${t.description}\n  seed question: ${t.seedQuestion}\n  seed answer: ${t.seedAnswer}`).join('\n')
    : '- (none)';
  return `You play a user who asked a research assistant: "${instance.query}"
The assistant may ask you clarification questions. Answer as this user.
Facts about you:
${persona}
What you can speak to (each with an example question and your answer):
${tgt}
Rules:
- Pick the one item above most relevant to the question and answer from its seed answer and the facts about you.
- Answer only what is asked, in one or two sentences, in the first person. Do not volunteer other items.
- If nothing above supports an answer, reply briefly that you have no particular preference; never invent a new preference.
Reply with one JSON object and nothing else: {"target_id": "<id of the item you used, or null>", "answer": "<your reply>"}`;
}

export function simulatorMessages(question: string, instance: Instance, dialogue?: DialogueSoFar): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: simulatorSystemPrompt(instance, activeTargets(instance, dialogue)) }];
  for (const t of dialogue?.turns ?? []) {
    messages.push({ role: 'user', content: t.question }, { role: 'assistant', content: JSON.stringify({ target_id: t.targetId, answer: t.answer }) });
  }
  // Roles are swapped on purpose: the assistant's question is the simulator's input.
  messages.push({ role: 'user', content: question });
  return messages;
}

export class LlmSimulator implements UserSimulator {
  private readonly client: OpenAI;
  private readonly url: string;

  constructor(private readonly cfg: LlmSimulatorConfig) {
    this.client = openaiClient(cfg);
    this.url = endpointUrl(cfg.baseUrl, 'chat/completions');
  }

  async answer(question: string, instance: Instance, dialogue?: DialogueSoFar): Promise<SimulatorAnswer> {
    const active = activeTargets(instance, dialogue);
    const res = await withRetries(
      () =>
        this.client.chat.completions.create({
          model: this.cfg.model,
          messages: simulatorMessages(question, instance, dialogue),
          temperature: this.cfg.temperature,
          max_tokens: this.cfg.maxTokens ?? 256,
        }),
      { maxRetries: this.cfg.maxRetries, baseDelayMs: this.cfg.retryBaseMs, what: `simulator ${this.url}` },
    );
    const content = res.choices[0]?.message?.content ?? '';
    const log = this.cfg.log ?? ((m: string) => console.warn(m));
    const parsed = parseJsonObject(content);
    if (!parsed.ok) {
      const text = stripThinking(content);
      log(`simulator ${this.url}: reply for instance ${instance.id} is not the JSON asked for (${parsed.error}); using it as plain text`);
      return { answer: text || NON_COMMITTAL, targetId: null };
    }
    const answer = typeof parsed.value.answer === 'string' ? parsed.value.answer.trim() : '';
    const id = parsed.value.target_id;
    const targetId = typeof id === 'string' && active.some((t) => t.id === id) ? id : null;
    if (id !== null && id !== undefined && targetId === null)
      log(`simulator ${this.url}: target_id ${JSON.stringify(id)} is not an active target of instance ${instance.id}; recorded as null`);
    return { answer: answer || NON_COMMITTAL, targetId: answer ? targetId : null };
  }
}
