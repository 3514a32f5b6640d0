// The request bodies sent to /v1/chat/completions and /v1/embeddings. Absent sampling fields
// are not sent (the server's defaults apply); chat_template_kwargs only when configured; the
// sampling and length fields follow the model family's rule (model-family.ts: no temperature /
// top_p and max_completion_tokens for OpenAI reasoning models).
// The same body (plus what the reply is read as) is what the request cache hashes.
import { z } from 'zod';
import { familyFields } from './model-family.ts';
import type { ChatMessage, ChatRequest, EndpointOptions } from './types.ts';

/** A JSON answer: its schema (zod: one source for the JSON schema sent and the validation of the reply). */
export interface JsonSpec<T> {
  /** response_format.json_schema.name: letters, digits, _ and - (OpenAI's rule). */
  name: string;
  schema: z.ZodType<T>;
  /** response_format.json_schema.strict (default true). */
  strict?: boolean;
  /** On a refused reply, retry with the reply and the error appended as a follow-up turn (default false). */
  feedback?: boolean;
}

/** The JSON schema of what the model must write (the schema's input side), without $schema. */
export function jsonSchemaOf(spec: JsonSpec<unknown>): Record<string, unknown> {
  const { $schema: _drop, ...schema } = z.toJSONSchema(spec.schema, { io: 'input' }) as Record<string, unknown>;
  return schema;
}

export function responseFormatFor(o: EndpointOptions, spec: JsonSpec<unknown>): Record<string, unknown> | undefined {
  switch (o.responseFormat ?? 'json_schema') {
    case 'json_schema':
      return { type: 'json_schema', json_schema: { name: spec.name, schema: jsonSchemaOf(spec), strict: spec.strict ?? true } };
    case 'json_object':
      return { type: 'json_object' };
    case 'none':
      return undefined;
  }
}

const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));

export function chatBody(o: EndpointOptions, req: ChatRequest, messages: ChatMessage[], responseFormat?: Record<string, unknown>): Record<string, unknown> {
  return {
    ...o.extraBody,
    ...defined({
      model: o.model,
      messages,
      ...familyFields(o.model, { temperature: req.temperature, top_p: req.topP, max_tokens: req.maxTokens, chat_template_kwargs: o.chatTemplateKwargs }),
      seed: req.seed,
      stop: req.stop,
      response_format: responseFormat,
    }),
  };
}

export function embeddingsBody(o: EndpointOptions, texts: string[]): Record<string, unknown> {
  return { ...o.extraBody, model: o.model, input: texts, encoding_format: 'float' };
}
