// The failure types of endpoint calls that callers may catch, next to util/errors.ts's
// InputError (a request the server rejected: not retried) and TransientError (the server
// stayed down, timed out or rate-limited us through every retry).

/** Why a reply was refused (the status is `reply_error:<kind>`). */
export type ReplyErrorKind =
  | 'no_choice' // no choices[0].message in the body
  | 'truncated' // finish_reason "length": cut at max_tokens
  | 'unclosed_think' // still inside a <think> block
  | 'empty' // nothing left after removing thinking
  | 'echo' // the reply repeats the whole system prompt
  | 'not_json' // not exactly one JSON value after removing thinking and ``` fences
  | 'schema' // JSON that fails the schema asked for
  | 'bad_embedding'; // /v1/embeddings data missing, repeated, ragged or not finite numbers

/**
 * Every attempt of a call got a reply that broke the reply rules. The simulator answers
 * non-committally on it; the data builder reports it with `reply`. The message names the
 * endpoint, the kind and the attempts but never quotes the reply (it may quote the prompt).
 */
export class ReplyError extends Error {
  override name = 'ReplyError';
  constructor(
    message: string,
    readonly kind: ReplyErrorKind,
    /** The last reply's raw content (thinking included), for reports; null when there was none. */
    readonly reply: string | null,
    readonly attempts: number,
  ) {
    super(message);
  }
}

/** One attempt's refused reply, thrown inside the retry loop (call-loop.ts), which retries it. */
export class BadReply extends Error {
  constructor(
    readonly kind: ReplyErrorKind,
    /** Safe for records: says what was wrong without quoting the reply. */
    readonly detail: string,
    readonly content: string | null,
    /** What the model is told when the error is fed back (may quote the parser's message). */
    readonly feedback: string = detail,
  ) {
    super(`${kind}: ${detail}`);
  }
}
