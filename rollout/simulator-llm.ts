// The LLM-backed user simulator (method §3; paper, "User Simulator": Qwen3-32B, temperature
// 0.7, top-p 1.0, at most 768 new tokens). It sees the persona and the active targets with
// their seed Q/A (never shown to the policy), picks the most relevant target for the question,
// answers only what is asked, grounded in the seed answer and persona, and gives a brief
// non-committal reply when nothing supports an answer. Reply format: one JSON object
// {"target_id": "<active id>" | null, "answer": "<text>"}, asked for with a JSON schema
// (response_format) through the endpoints/ layer, which also switches Qwen3's thinking off.
// A reply that is cut at max_tokens, still inside <think>, repeats the system prompt or is not
// the JSON asked for is a failed call (retried by endpoints/); when every attempt fails the
// user gives the non-committal answer. The raw reply is never forwarded to the policy: only
// the schema-checked `answer` is (method §14.6).
import { z } from 'zod';
import { personaLines } from '../data/persona.ts';
import type { Instance, Target } from '../data/schema.ts';
import { ReplyError, type Endpoint } from '../endpoints/index.ts';
import { activeTargets, NON_COMMITTAL, type DialogueSoFar, type LateActivation, type SimulatorAnswer, type UserSimulator } from './simulator.ts';
import type { ChatMessage } from '../core/tokenizer.ts';

export interface LlmSimulatorConfig {
  /** The simulator endpoint (role "simulator"): retry rule, concurrency cap, call records. */
  endpoint: Endpoint;
  temperature: number;
  topP: number;
  maxTokens: number;
  /** Which targets retrieved memories cover (late activation, simulator.ts); absent: only the dialogue activates. */
  activation?: LateActivation;
  log?: (msg: string) => void;
}

/** The answer's JSON schema: target_id limited to the active targets' ids (or null). */
export function simulatorAnswerSchema(activeIds: readonly string[]) {
  const id = activeIds.length ? z.enum(activeIds as [string, ...string[]]).nullable() : z.null();
  return z.object({ target_id: id, answer: z.string() }).strict();
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

/** `active`: the targets the user can speak to now (default: those the dialogue activated). */
export function simulatorMessages(question: string, instance: Instance, dialogue?: DialogueSoFar, active = activeTargets(instance, dialogue)): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: simulatorSystemPrompt(instance, active) }];
  for (const t of dialogue?.turns ?? []) {
    messages.push({ role: 'user', content: t.question }, { role: 'assistant', content: JSON.stringify({ target_id: t.targetId, answer: t.answer }) });
  }
  // Roles are swapped on purpose: the assistant's question is the simulator's input.
  messages.push({ role: 'user', content: question });
  return messages;
}

export class LlmSimulator implements UserSimulator {
  constructor(private readonly cfg: LlmSimulatorConfig) {}

  async answer(question: string, instance: Instance, dialogue?: DialogueSoFar): Promise<SimulatorAnswer> {
    const active = this.cfg.activation ? await this.cfg.activation.active(instance, dialogue) : activeTargets(instance, dialogue);
    const req = {
      messages: simulatorMessages(question, instance, dialogue, active),
      temperature: this.cfg.temperature,
      topP: this.cfg.topP,
      maxTokens: this.cfg.maxTokens,
    };
    try {
      const r = await this.cfg.endpoint.chatJson(req, { name: 'user_answer', schema: simulatorAnswerSchema(active.map((t) => t.id)) });
      const answer = r.value.answer.trim();
      // reply: the accepted JSON text (thinking and fences removed), for the trajectories view
      return answer ? { answer, targetId: r.value.target_id, reply: r.text } : { answer: NON_COMMITTAL, targetId: null, reply: r.text };
    } catch (e) {
      if (!(e instanceof ReplyError)) throw e; // transport failures after every retry: the rollout fails
      // The message names the endpoint and the kind, never the reply (it may quote the prompt).
      (this.cfg.log ?? ((m: string) => console.warn(m)))(
        `simulator: no acceptable reply for instance ${instance.id} (${e.message}); answering non-committally`,
      );
      return { answer: NON_COMMITTAL, targetId: null, reply: null, replyError: `reply_error:${e.kind} after ${e.attempts} attempt(s)` };
    }
  }
}
