// Qwen3-family models think by default in vLLM's chat completions (the chat template opens a
// <think> block) unless the request carries chat_template_kwargs {"enable_thinking": false}
// (vLLM docs, "Reasoning Outputs": "The reasoning feature for the Qwen3 series is enabled by
// default. To disable it, you must pass enable_thinking=False in your chat_template_kwargs").
// Configs use this to default thinking off for those models and send nothing to others
// (OpenAI's API rejects unknown body fields).

/** Qwen3, Qwen3.5, ... by any spelling servers use: "Qwen/Qwen3-32B", "qwen3:8b", "Qwen3.5-27B-AWQ". Not Qwen2.5, not QwQ. */
export function isQwen3Model(model: string): boolean {
  return /(?:^|[^a-z0-9])qwen3(?![0-9])/i.test(model);
}

/** {enable_thinking: false} for a Qwen3-family model, else null (nothing sent). */
export function defaultChatTemplateKwargs(model: string): Record<string, unknown> | null {
  return isQwen3Model(model) ? { enable_thinking: false } : null;
}
