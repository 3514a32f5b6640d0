// Two kinds of failure (errors name the input, the value, the rule and the fix): bad input that must not be retried, and transient
// trouble (timeouts, a restarting server) that gets bounded backoff.

/** Bad data or config: never retried. The message names the input, the value, the rule and the fix. */
export class InputError extends Error {
  override name = 'InputError';
  constructor(
    message: string,
    readonly problems: string[] = [message],
  ) {
    super(message);
  }
}

/** A failure worth retrying with backoff (network, timeouts, 5xx). */
export class TransientError extends Error {
  override name = 'TransientError';
}

/** The disk is full (ENOSPC), whether as an error's code or quoted in a job's failure reason. */
export function isDiskFull(e: unknown): boolean {
  if ((e as NodeJS.ErrnoException | null)?.code === 'ENOSPC') return true;
  const text = typeof e === 'string' ? e : (e as Error | null)?.message;
  return typeof text === 'string' && /ENOSPC|no space left on device/i.test(text);
}

/** Internal invariant; a failure here is a bug in gsteer, not in the user's input. */
export function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`internal: ${message}`);
}
