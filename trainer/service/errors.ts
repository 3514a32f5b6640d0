// HTTP errors of gsteer's Tinker-API server: a status and a message that names the input, the
// rule and the fix, sent as {"detail": message} (the FastAPI shape Tinker servers use). Inside
// a future, the same problems become a RequestFailedResponse instead (futures.ts): category
// "user" for bad input (InputError), "server" for anything else.
import { InputError } from '../../util/errors.ts';
import type { ErrorCategory } from './futures.ts';

export class ServiceError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (message: string) => new ServiceError(404, message);
export const badRequest = (message: string) => new ServiceError(400, message);

/** A failed future's body: the message, and whose fault it was. */
export function classifyFailure(e: unknown): { error: string; category: ErrorCategory } {
  if (e instanceof InputError || (e instanceof ServiceError && e.status < 500)) return { error: e.message, category: 'user' };
  return { error: `internal error in gsteer's trainer service: ${(e as Error)?.message ?? String(e)}`, category: 'server' };
}
