// Reading one field of a JSON request body, with OpenAI-style 400s that name the field,
// the value, the rule and the fix, e.g. "top_p must be in (0, 1] but is 1.3".
import { badRequest } from './errors.ts';

export type Body = Record<string, unknown>;

export interface NumberRule {
  int?: boolean;
  min?: number;
  max?: number;
  minOpen?: boolean; // (min, ...] instead of [min, ...]
}

const show = (v: unknown) => (typeof v === 'string' ? `"${v}"` : (JSON.stringify(v) ?? String(v)));

function ruleText(r: NumberRule): string {
  const kind = r.int ? 'an integer' : 'a number';
  if (r.min !== undefined && r.max !== undefined) return `${r.int ? 'an integer ' : ''}in ${r.minOpen ? '(' : '['}${r.min}, ${r.max}]`;
  if (r.min !== undefined) return `${kind} ${r.minOpen ? '>' : '>='} ${r.min}`;
  if (r.max !== undefined) return `${kind} <= ${r.max}`;
  return kind;
}

function fits(v: number, r: NumberRule): boolean {
  if (r.int && !Number.isSafeInteger(v)) return false;
  if (r.min !== undefined && (r.minOpen ? v <= r.min : v < r.min)) return false;
  return r.max === undefined || v <= r.max;
}

/** A number field; absent or null gives `def`. */
export function num<D extends number | null>(body: Body, key: string, def: D, rule: NumberRule = {}): number | D {
  const v = body[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || !fits(v, rule)) throw badRequest(`${key} must be ${ruleText(rule)} but is ${show(v)}`, key);
  return v;
}

export function bool(body: Body, key: string, def: boolean): boolean {
  const v = body[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'boolean') throw badRequest(`${key} must be true or false but is ${show(v)}`, key);
  return v;
}

export function str(body: Body, key: string): string {
  const v = body[key];
  if (typeof v !== 'string' || v === '') throw badRequest(`${key} must be a non-empty string but is ${show(v)}`, key);
  return v;
}

/** `stop`: a string or a list of non-empty strings (OpenAI and vLLM accept both). */
export function stopStrings(body: Body): string[] {
  const v = body.stop;
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || list.some((s) => typeof s !== 'string' || s === ''))
    throw badRequest(`stop must be a non-empty string or a list of non-empty strings but is ${show(v)}`, 'stop');
  return list as string[];
}

/** A list of token ids in [0, vocabSize). */
export function tokenIds(v: unknown, key: string, vocabSize: number): number[] {
  if (!Array.isArray(v)) throw badRequest(`${key} must be a list of token ids but is ${show(v)}`, key);
  v.forEach((id, i) => {
    if (!Number.isSafeInteger(id) || (id as number) < 0 || (id as number) >= vocabSize)
      throw badRequest(`${key}[${i}] must be a token id in [0, ${vocabSize}) but is ${show(id)}`, key);
  });
  return v as number[];
}

/** Fields gsteer serve does not implement: allowed only at their no-op value. */
const UNSUPPORTED: Record<string, (v: unknown) => boolean> = {
  echo: (v) => v === false,
  presence_penalty: (v) => v === 0,
  frequency_penalty: (v) => v === 0,
  repetition_penalty: (v) => v === 1,
  min_p: (v) => v === 0,
  min_tokens: (v) => v === 0,
  logit_bias: (v) => typeof v === 'object' && v !== null && Object.keys(v).length === 0,
  suffix: () => false,
  tools: (v) => Array.isArray(v) && v.length === 0,
  prompt_logprobs: () => false,
};

export function rejectUnsupported(body: Body): void {
  for (const [key, isNoOp] of Object.entries(UNSUPPORTED)) {
    const v = body[key];
    if (v !== undefined && v !== null && !isNoOp(v)) throw badRequest(`${key} is not supported by gsteer serve (got ${show(v)}); omit it`, key);
  }
}
