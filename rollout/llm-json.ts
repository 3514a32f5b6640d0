// Reading a JSON object out of an LLM reply (simulator, judge): Qwen3 may prepend a
// <think>...</think> block and models like to wrap JSON in ``` fences; both are removed,
// then the rest must be exactly one JSON object (no prose around it). Never throws.
export type JsonReply = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

export function stripThinking(text: string): string {
  return text.replace(/<think>[\s\S]*?<\/think>/g, '').trim();
}

export function parseJsonObject(text: string | null | undefined): JsonReply {
  let body = stripThinking(text ?? '');
  const fence = /^```(?:json)?\s*\n?([\s\S]*?)\n?```$/.exec(body);
  if (fence) body = (fence[1] ?? '').trim();
  if (!body) return { ok: false, error: 'empty reply' };
  try {
    const v: unknown = JSON.parse(body);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return { ok: false, error: `expected a JSON object, got ${Array.isArray(v) ? 'an array' : typeof v}` };
    return { ok: true, value: v as Record<string, unknown> };
  } catch (e) {
    return { ok: false, error: `not JSON (${(e as Error).message}): ${JSON.stringify(body.slice(0, 120))}` };
  }
}
