// The LLM memory judge (method §6; Qwen3-32B in the paper) through the endpoints/ layer. It
// sees the user's profile, the interaction (questions, user answers, retrieved memories)
// and the final covered slots, and returns ONE JSON object:
//   {"keep": ["<slot name>", ...], "profile_sentence": "<one sentence>" | null}
// asked for with a JSON schema (judgeReplySchema) and read strictly: unknown keys, a name that
// is not a covered slot, a non-string entry or a profile sentence that is not one sentence
// make the reply refused (retried by endpoints/); when every attempt is refused the judge keeps
// nothing (every slot gets 'judge_error') and says so. Transport errors are retried and then
// thrown: the caller decides whether to skip the update.
import { z } from 'zod';
import { ReplyError, type Endpoint } from '../endpoints/index.ts';
import type { JudgeInput, JudgeVerdict, MemoryJudge } from './memory-judge.ts';
import { policyProfile } from './prompt.ts';
import type { ChatMessage } from '../core/tokenizer.ts';

export const JUDGE_SYSTEM_PROMPT = `You maintain a user's long-term memory for a research assistant.
After one conversation you decide which of the assistant's final covered slots are worth remembering.
Keep a slot only if ALL hold:
- it is directly supported by what the user said or what was retrieved from memory in this conversation (no weak inferences);
- it is specific to this user (not generic content, not the assistant's own advice);
- it is likely to be useful in future conversations (not a temporary detail);
- it is not already stated in the profile;
- it is not unnecessarily sensitive (health, religion, sexuality, politics, precise address, identity or account numbers).
Add a profile sentence only if the kept information shows a durable preference, goal or constraint that applies beyond this task; otherwise null.
Reply with one JSON object and nothing else: {"keep": ["<slot name>", ...], "profile_sentence": "<one sentence>" or null}`;

export function judgeMessages({ instance, trajectory, snapshot }: JudgeInput): ChatMessage[] {
  const lines = [`REQUEST: ${instance.query}`, `PROFILE: ${policyProfile(instance, snapshot.profile) || '(none)'}`, 'CONVERSATION:'];
  for (const t of trajectory.turns) {
    const o = t.observation;
    if (o.kind === 'answer') lines.push(`- assistant asked: ${o.question}`, `  user: ${o.answer}`);
    if (o.kind === 'memory') lines.push(`- memory search: ${o.query}`, ...o.results.map((r) => `  memory: ${r.name} (${r.purpose}): ${r.value}`));
  }
  lines.push('COVERED SLOTS:');
  for (const s of trajectory.finalSlots.filter((x) => x.status === 'covered'))
    lines.push(`- ${s.name} | purpose: ${s.purpose} | source: ${s.source} | value: ${s.value}`);
  return [
    { role: 'system', content: JUDGE_SYSTEM_PROMPT },
    { role: 'user', content: lines.join('\n') },
  ];
}

/**
 * The reply's schema (sent as response_format and checked on the reply): "keep" lists covered
 * slot names only (repeats dropped), "profile_sentence" is one sentence or null, no other key.
 */
export function judgeReplySchema(covered: readonly string[]) {
  const name = covered.length ? z.enum(covered as [string, ...string[]]) : z.never();
  const sentence = z.string().refine((s) => !s.trim() || (!s.trim().includes('\n') && !/[.!?]\s+\S/.test(s.trim())), 'must be one sentence');
  return z
    .object({ keep: z.array(name), profile_sentence: sentence.nullable() })
    .strict()
    .transform((v) => ({ keep: [...new Set(v.keep)], profileSentence: v.profile_sentence?.trim() || null }));
}

export interface LlmJudgeConfig {
  /** The judge endpoint (role "judge"). */
  endpoint: Endpoint;
  temperature: number;
  maxTokens: number;
  log?: (msg: string) => void;
}

export class LlmJudge implements MemoryJudge {
  constructor(private readonly cfg: LlmJudgeConfig) {}

  async judge(input: JudgeInput): Promise<JudgeVerdict> {
    const slots = input.trajectory.finalSlots;
    const covered = slots.filter((s) => s.status === 'covered').map((s) => s.name);
    const req = { messages: judgeMessages(input), temperature: this.cfg.temperature, maxTokens: this.cfg.maxTokens };
    let reply: { keep: string[]; profileSentence: string | null };
    try {
      reply = (await this.cfg.endpoint.chatJson(req, { name: 'memory_verdict', schema: judgeReplySchema(covered) })).value;
    } catch (e) {
      if (!(e instanceof ReplyError)) throw e; // transport failures after every retry: the caller decides
      (this.cfg.log ?? ((m: string) => console.warn(m)))(
        `memory judge: no acceptable reply for ${input.trajectory.groupId}/${input.trajectory.index} (${e.message}); keeping nothing`,
      );
      return { verdicts: slots.map((slot) => ({ slot, reason: slot.status === 'covered' ? 'judge_error' : 'not_covered' })), profileSentence: null };
    }
    return {
      verdicts: slots.map((slot) => ({ slot, reason: slot.status !== 'covered' ? 'not_covered' : reply.keep.includes(slot.name) ? 'kept' : 'rejected' })),
      profileSentence: reply.profileSentence,
    };
  }
}
