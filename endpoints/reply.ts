// The reply rules. A chat reply is refused (BadReply, so the call is retried) when it was cut
// at max_tokens (finish_reason "length"), is still inside a <think> block, is empty once
// thinking is removed, or repeats the whole system prompt. A JSON reply must then be exactly
// one JSON value, once ``` fences are removed, that passes the schema asked for. The
// reasoning fields a reasoning parser fills (`reasoning_content`, newer vLLM `reasoning`) are
// never read: thinking is not an answer.
import type { z } from 'zod';
import { BadReply } from './errors.ts';

/** Content and finish reason of choices[0] of a chat completion body; BadReply when there is no message. */
export function firstChoice(body: unknown): { content: string | null; finishReason: string | null } {
  const choice = (body as { choices?: { message?: { content?: unknown }; finish_reason?: unknown }[] } | null)?.choices?.[0];
  if (!choice?.message) throw new BadReply('no_choice', 'the response has no choices[0].message', null);
  const c = choice.message.content;
  return { content: typeof c === 'string' ? c : null, finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null };
}

/**
 * The answer in `content`: closed <think>...</think> blocks removed; a reply whose opening
 * <think> was in the prompt (newer Qwen templates) keeps what follows the last </think>.
 */
export function removeThinking(content: string): string {
  const rest = content.replace(/<think>[\s\S]*?<\/think>/g, '');
  if (rest.includes('<think>'))
    throw new BadReply(
      'unclosed_think',
      'the reply ends inside a <think> block',
      content,
      'Your reply ended while still thinking. Reply with the answer only.',
    );
  const end = rest.lastIndexOf('</think>');
  return (end >= 0 ? rest.slice(end + '</think>'.length) : rest).trim();
}

/** The text answer of a reply under the rules above. */
export function answerText(content: string | null, finishReason: string | null, systemPrompt: string | undefined): string {
  if (finishReason === 'length')
    throw new BadReply(
      'truncated',
      'the reply was cut at max_tokens (finish_reason "length")',
      content,
      'Your reply was cut off at the token limit. Reply again, shorter, with the answer only.',
    );
  const text = removeThinking(content ?? '');
  if (!text) throw new BadReply('empty', 'the reply is empty once thinking is removed', content, 'Your reply was empty. Reply with the answer.');
  const sys = systemPrompt?.trim() ?? '';
  if (sys.length >= 20 && text.includes(sys))
    throw new BadReply('echo', 'the reply repeats the system prompt', content, 'Your reply repeated your instructions. Reply with the answer only.');
  return text;
}

/** ```json ... ``` (or bare ```) around the whole text removed. */
export function stripFences(text: string): string {
  const m = /^```[a-zA-Z]*[ \t]*\n?([\s\S]*?)\n?```$/.exec(text.trim());
  return (m ? (m[1] ?? '') : text).trim();
}

/** The schema's output for a JSON answer text; BadReply('not_json' | 'schema') otherwise. */
export function readJson<T>(text: string, schema: z.ZodType<T>, content: string | null): { value: T; json: string } {
  const json = stripFences(text);
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (e) {
    // The parser's message quotes the reply: it goes to the model only, never into a record.
    throw new BadReply(
      'not_json',
      'the reply is not exactly one JSON value',
      content,
      `Your reply is not valid JSON (${(e as Error).message}). Reply with only the JSON, no prose.`,
    );
  }
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issues = r.error.issues.slice(0, 3).map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`);
    throw new BadReply(
      'schema',
      `the JSON fails the schema (${issues.join('; ')})`,
      content,
      `Your JSON does not follow the schema: ${issues.join('; ')}. Reply with corrected JSON only.`,
    );
  }
  return { value: r.data, json };
}
