// One HTTP request as the route handlers see it, what they answer, and the zod check that turns
// a body that breaks the Tinker schema into a 400 naming the field, the value and the rule.
import type { z } from 'zod';
import { InputError } from '../../util/errors.ts';
import type { ServiceState } from './state.ts';

export interface Request {
  path: string;
  /** The parsed JSON body ({} for GET or a protobuf body). */
  json: unknown;
  /** The raw (inflated) body when it is application/x-protobuf. */
  proto: Buffer | null;
  bytesIn: number;
  idempotencyKey: string | null;
  /** The client asked for protobuf results (Accept: application/x-protobuf). */
  acceptProto: boolean;
}

export interface Reply {
  status?: number;
  json?: unknown;
  proto?: Uint8Array;
}

export type Handler = (state: ServiceState, req: Request) => Promise<Reply>;

export function parseBody<S extends z.ZodType>(schema: S, req: Request): z.output<S> {
  const r = schema.safeParse(req.json);
  if (r.success) return r.data;
  const issues = r.error.issues.slice(0, 4).map((i) => {
    const at = i.path.map(String).join('.') || '(body)';
    let value: unknown = req.json;
    for (const k of i.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey];
    return `${at} = ${JSON.stringify(value)?.slice(0, 60) ?? 'missing'}: ${i.message}`;
  });
  throw new InputError(`${req.path}: ${issues.join('; ')} (see the Tinker SDK's types, trainer/tinker/wire.ts)`);
}

/** A future's answer: {request_id, model_id}, the SDK's UntypedAPIFuture. */
export const futureReply = (requestId: string, modelId?: string): Reply => ({ json: { request_id: requestId, ...(modelId ? { model_id: modelId } : {}) } });
