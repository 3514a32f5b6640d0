// The LLM memory judge (method §6; Qwen3-32B in the paper) through the `openai` client. It
// sees the user's profile, the interaction (questions, user answers, retrieved memories)
// and the final covered slots, and returns ONE JSON object:
//   {"keep": ["<slot name>", ...], "profile_sentence": "<one sentence>" | null}
// Parsed strictly: unknown keys, a name that is not a covered slot, a non-string entry or
// a profile sentence that is not one sentence make the whole reply malformed, which keeps
// nothing (every slot gets 'judge_error') and is logged. Transport errors are retried
// (openai-retry.ts) and then thrown: the caller decides whether to skip the update.
import type OpenAI from 'openai';
import { parseJsonObject } from './llm-json.ts';
import type { JudgeInput, JudgeVerdict, MemoryJudge } from './memory-judge.ts';
import { endpointUrl, openaiClient, type EndpointConfig } from './openai-client.ts';
import { withRetries } from './openai-retry.ts';
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
  for (const s of trajectory.finalSlots.filter((x) => x.status === 'covered')) lines.push(`- ${s.name} | purpose: ${s.purpose} | source: ${s.source} | value: ${s.value}`);
  return [
    { role: 'system', content: JUDGE_SYSTEM_PROMPT },
    { role: 'user', content: lines.join('\n') },
  ];
}

/** Strict reading of the judge's reply; `error` says what was wrong. */
export function readJudgeReply(content: string, covered: readonly string[]): { keep: string[]; profileSentence: string | null } | { error: string } {
  const parsed = parseJsonObject(content);
  if (!parsed.ok) return { error: parsed.error };
  const v = parsed.value;
  const extra = Object.keys(v).filter((k) => k !== 'keep' && k !== 'profile_sentence');
  if (extra.length) return { error: `unknown key(s) ${extra.join(', ')}` };
  if (!Array.isArray(v.keep) || !v.keep.every((x) => typeof x === 'string')) return { error: '"keep" must be a list of slot names' };
  const unknown = (v.keep as string[]).filter((n) => !covered.includes(n));
  if (unknown.length) return { error: `"keep" names ${JSON.stringify(unknown)}, not covered slots` };
  const ps = v.profile_sentence;
  if (ps !== null && ps !== undefined && typeof ps !== 'string') return { error: '"profile_sentence" must be a string or null' };
  const sentence = typeof ps === 'string' && ps.trim() ? ps.trim() : null;
  if (sentence && (sentence.includes('\n') || /[.!?]\s+\S/.test(sentence))) return { error: '"profile_sentence" must be one sentence' };
  return { keep: [...new Set(v.keep as string[])], profileSentence: sentence };
}

export interface LlmJudgeConfig extends EndpointConfig {
  model: string;
  maxRetries: number;
  retryBaseMs?: number;
  log?: (msg: string) => void;
}

export class LlmJudge implements MemoryJudge {
  private readonly client: OpenAI;
  private readonly url: string;

  constructor(private readonly cfg: LlmJudgeConfig) {
    this.client = openaiClient(cfg);
    this.url = endpointUrl(cfg.baseUrl, 'chat/completions');
  }

  async judge(input: JudgeInput): Promise<JudgeVerdict> {
    const res = await withRetries(
      () => this.client.chat.completions.create({ model: this.cfg.model, messages: judgeMessages(input), temperature: 0, max_tokens: 512 }),
      { maxRetries: this.cfg.maxRetries, baseDelayMs: this.cfg.retryBaseMs, what: `memory judge ${this.url}` },
    );
    const slots = input.trajectory.finalSlots;
    const covered = slots.filter((s) => s.status === 'covered').map((s) => s.name);
    const reply = readJudgeReply(res.choices[0]?.message?.content ?? '', covered);
    if ('error' in reply) {
      (this.cfg.log ?? ((m: string) => console.warn(m)))(
        `memory judge ${this.url}: malformed reply for ${input.trajectory.groupId}/${input.trajectory.index} (${reply.error}); keeping nothing`,
      );
      return { verdicts: slots.map((slot) => ({ slot, reason: slot.status === 'covered' ? 'judge_error' : 'not_covered' })), profileSentence: null };
    }
    return {
      verdicts: slots.map((slot) => ({ slot, reason: slot.status !== 'covered' ? 'not_covered' : reply.keep.includes(slot.name) ? 'kept' : 'rejected' })),
      profileSentence: reply.profileSentence,
    };
  }
}
