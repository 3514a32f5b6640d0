// The body of a 200 chat completion from the fake vLLM server, built the way vLLM serving
// Qwen3 builds it: the answer, possibly fenced; a <think> block before it unless
// chat_template_kwargs.enable_thinking is false; the whole output cut at max_tokens counted
// with the real Qwen3 tokenizer (finish_reason "length", possibly inside <think>); with a
// reasoning parser, the thinking moved to message.reasoning_content (or .reasoning).
import { qwen3Tokenizer, renderChatML, type ChatMessage } from '../../core/tokenizer.ts';

export interface FakeChatRequest {
  model: string;
  messages: ChatMessage[];
  max_tokens?: number;
  max_completion_tokens?: number;
  response_format?: { type: string; json_schema?: { name: string; schema: unknown; strict?: boolean } };
  chat_template_kwargs?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface ChatShape {
  content: string;
  think: string | null;
  fence: boolean;
  /** Cut the output at this many tokens (besides max_tokens). */
  cutAt: number | null;
  reasoningField: 'reasoning_content' | 'reasoning' | null;
}

export interface BuiltChat {
  body: Record<string, unknown>;
  tags: string[]; // behaviour counters to bump: truncated, truncated_in_think, reasoning_parsed
}

export function buildChat(req: FakeChatRequest, shape: ChatShape): BuiltChat {
  const tok = qwen3Tokenizer();
  const tags: string[] = [];
  const answer = shape.fence ? '```json\n' + shape.content + '\n```' : shape.content;
  let output = shape.think !== null ? `<think>\n${shape.think}\n</think>\n\n${answer}` : answer;
  const ids = tok.encode(output);
  const limit = Math.min(req.max_tokens ?? req.max_completion_tokens ?? Infinity, shape.cutAt ?? Infinity);
  let finish = 'stop';
  let completionTokens = ids.length;
  if (ids.length > limit) {
    output = tok.decode(ids.slice(0, limit));
    finish = 'length';
    completionTokens = limit;
    tags.push('truncated');
    if (output.includes('<think>') && !output.includes('</think>')) tags.push('truncated_in_think');
  }
  const message: Record<string, unknown> = { role: 'assistant', content: output, tool_calls: [] };
  if (shape.reasoningField && output.startsWith('<think>')) {
    tags.push('reasoning_parsed');
    const end = output.indexOf('</think>');
    message[shape.reasoningField] = (end >= 0 ? output.slice('<think>'.length, end) : output.slice('<think>'.length)).trim();
    message.content = end >= 0 ? output.slice(end + '</think>'.length).replace(/^\s+/, '') : null;
  }
  const promptTokens = tok.encode(renderChatML(req.messages, false) + '<|im_start|>assistant\n').length;
  return {
    tags,
    body: {
      id: `chatcmpl-fake`,
      object: 'chat.completion',
      created: 0,
      model: req.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish, stop_reason: null }],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    },
  };
}
