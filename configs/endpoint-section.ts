// The one shape of an LLM/HTTP endpoint section (policy, simulator, encoder, judge,
// eval.extractor, qref.filter.llm, eval.downstream.agent/judge, eval.baselines.*) and the one
// rule over all of them: a section whose kind calls a server needs its baseUrl. A section is
// `endpointSection({...})` (its kinds, default model, timeout, key variable and fields of its
// own); `checkEndpointSections` finds every section in a schema and checks each resolved one.
// configs/endpoints.ts maps a resolved section to endpoints/ options (method §14.6).
import { z } from 'zod';

const positiveInt = z.number().int().positive();

/**
 * The fields of an LLM chat section, for sections that take some of them (`chat: true` takes
 * all three): vLLM's chat_template_kwargs (absent: {enable_thinking: false} for Qwen3-family
 * models, nothing for others, since OpenAI's API rejects unknown fields; null: never send it),
 * how JSON answers are asked for, and the biggest reply in MiB before an attempt fails
 * (endpoints/bounded-fetch.ts; not from the paper).
 */
export const chatFields = {
  chatTemplateKwargs: z.record(z.string(), z.unknown()).nullable().optional(),
  responseFormat: z.enum(['json_schema', 'json_object', 'none']).default('json_schema'),
  maxResponseMb: z.number().positive().default(32),
};

/** What the one rule needs of a section: which field says its kind and which kinds call `baseUrl`. */
export interface KindRule {
  kindKey: string;
  /** The first kind, the default (runs without a server). */
  local: string;
  remote: readonly string[];
  /** What to set baseUrl to, in the error's fix. */
  urlHint: string;
}

/** Every section built here (with its kind rule where it chooses a kind); the walk below finds them by identity. */
const sections = z.registry<{ rule?: KindRule }>();

export interface EndpointSpec<K extends string, F extends z.ZodRawShape, KK extends string, C extends boolean, O extends boolean> {
  /** The section's kinds, the default first; absent: always a server. */
  kinds?: readonly [K, ...K[]];
  /** The field naming the kind (`kind`; the policy's is `server`). */
  kindKey?: KK;
  /** Kinds that call baseUrl (default: every kind but the first). */
  remote?: readonly K[];
  /** With no kinds: baseUrl may be left out (checked where the section is used); else required. */
  optionalUrl?: O;
  /** What to set baseUrl to, in the error's fix (default: an OpenAI-compatible /v1 URL). */
  urlHint?: string;
  model: string;
  apiKeyEnv: string;
  /** Per-attempt deadline, connect to the body's last byte (endpoints/ retry rule, method §14.6). */
  timeoutMs: number;
  /** Requests in flight through the endpoint per process. */
  concurrency: number;
  /** chatTemplateKwargs, responseFormat and maxResponseMb (`chatFields`). */
  chat?: C;
  /** The role's own fields, placed after apiKeyEnv. */
  fields?: F;
}

/** The shape `endpointSection` builds (its spreads lose the literal keys). */
type SectionShape<K extends string, F extends z.ZodRawShape, KK extends string, C extends boolean, O extends boolean> = ([K] extends [never]
  ? { baseUrl: O extends true ? z.ZodOptional<z.ZodString> : z.ZodString }
  : { [k in KK]: z.ZodDefault<z.ZodEnum<{ [x in K]: x }>> } & { baseUrl: z.ZodOptional<z.ZodString> }) & {
  model: z.ZodDefault<z.ZodString>;
  apiKeyEnv: z.ZodDefault<z.ZodString>;
  timeoutMs: z.ZodDefault<z.ZodNumber>;
  maxRetries: z.ZodDefault<z.ZodNumber>;
  concurrency: z.ZodDefault<z.ZodNumber>;
} & (C extends true ? typeof chatFields : object) &
  F;

/**
 * One endpoint section: `<kindKey>`, `baseUrl`, `model`, `apiKeyEnv` (the name of the variable
 * holding the key; the key never goes in a config), the role's fields, `timeoutMs`,
 * `maxRetries` (3: bounded retries with backoff), then the chat fields and `concurrency`.
 */
export function endpointSection<
  K extends string = never,
  F extends z.ZodRawShape = Record<never, z.ZodType>,
  KK extends string = 'kind',
  C extends boolean = false,
  O extends boolean = false,
>(spec: EndpointSpec<K, F, KK, C, O>): z.ZodObject<SectionShape<K, F, KK, C, O>, z.core.$strict> {
  const kindKey: string = spec.kindKey ?? 'kind';
  const { chatTemplateKwargs, responseFormat, maxResponseMb } = chatFields;
  const schema = z
    .object({
      ...(spec.kinds ? { [kindKey]: z.enum(spec.kinds as readonly [K, ...K[]]).default(spec.kinds[0]) } : {}),
      baseUrl: spec.kinds || spec.optionalUrl ? z.string().url().optional() : z.string().url(),
      model: z.string().min(1).default(spec.model),
      apiKeyEnv: z.string().min(1).default(spec.apiKeyEnv),
      ...spec.fields,
      timeoutMs: positiveInt.default(spec.timeoutMs),
      maxRetries: z.number().int().min(0).default(3),
      ...(spec.chat ? { chatTemplateKwargs, responseFormat } : {}),
      concurrency: positiveInt.default(spec.concurrency),
      ...(spec.chat ? { maxResponseMb } : {}),
    })
    .strict();
  const urlHint = spec.urlHint ?? 'an OpenAI-compatible /v1 URL';
  sections.add(schema, spec.kinds ? { rule: { kindKey, local: spec.kinds[0], remote: spec.remote ?? spec.kinds.slice(1), urlHint } } : {});
  return schema as unknown as z.ZodObject<SectionShape<K, F, KK, C, O>, z.core.$strict>;
}

/** Every endpoint section in `schema` (a section's own ones too) with its path, found through defaults and optionals. */
export function endpointSections(schema: z.ZodType, path: string[] = []): { path: string[]; rule?: KindRule | undefined }[] {
  const meta = sections.get(schema);
  const here = meta ? [{ path, rule: meta.rule }] : [];
  if (schema instanceof z.ZodObject)
    return [...here, ...Object.entries(schema.shape as Record<string, z.ZodType>).flatMap(([k, s]) => endpointSections(s, [...path, k]))];
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault || schema instanceof z.ZodOptional || schema instanceof z.ZodNullable)
    return endpointSections(schema.unwrap() as z.ZodType, path);
  return [];
}

const at = (tree: unknown, path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), tree);

/**
 * The one rule, as a superRefine over `schema`'s resolved value: every section whose kind
 * calls a server has a baseUrl, else an issue naming the key, the rule and the fix.
 */
export function checkEndpointSections(schema: z.ZodType): (value: unknown, ctx: z.RefinementCtx) => void {
  const ruled = endpointSections(schema).flatMap(({ path, rule }) => (rule ? [{ path, rule }] : []));
  return (value, ctx) => {
    for (const { path, rule } of ruled) {
      const s = at(value, path) as Record<string, unknown> | undefined;
      const kind = s?.[rule.kindKey];
      if (!s || typeof kind !== 'string' || !rule.remote.includes(kind) || s.baseUrl) continue;
      const p = path.join('.');
      ctx.addIssue({
        code: 'custom',
        path: [...path, 'baseUrl'],
        message: `${p}.${rule.kindKey} is "${kind}" but ${p}.baseUrl is not set; set it to ${rule.urlHint} or use ${p}.${rule.kindKey}=${rule.local}`,
      });
    }
  };
}
