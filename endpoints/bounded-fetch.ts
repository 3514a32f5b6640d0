// A fetch that cannot hang or flood its caller: one deadline for the whole exchange (connect,
// headers and every byte of the body), a cap on the body's size, and a body cut off mid-way
// (a reset, a closed socket) reported as a transport failure of its own. The openai SDK's
// timeout stops counting once the headers arrive and its body read has no cap, so every
// endpoint client (endpoints/client.ts), the policy server's admin calls and any other
// client built on endpoints/ goes through this one primitive. Failures are the three
// transport errors below; the retry rule (retry-rule.ts) retries each like a 5xx.

/** The exchange did not complete within its deadline (headers or body). */
export class DeadlineExceeded extends Error {
  override name = 'DeadlineExceeded';
}

/** The body grew past the cap; the rest is not read. */
export class ResponseTooLarge extends Error {
  override name = 'ResponseTooLarge';
}

/** The connection broke while the body was arriving (reset, socket closed early). */
export class ConnectionLost extends Error {
  override name = 'ConnectionLost';
}

export interface FetchBounds {
  /** Milliseconds from the call to the body's last byte. */
  deadlineMs: number;
  /** Largest body accepted, in bytes. */
  maxBytes: number;
}

/** Bytes in `n` MiB (config fields give the cap in MiB). */
export const mib = (n: number) => Math.round(n * 2 ** 20);

/** Default response cap: far above any completion, embedding batch or admin reply gsteer makes. */
export const DEFAULT_MAX_RESPONSE_MB = 32;

/** Statuses whose response has no body (fetch's Response refuses one). */
const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * `fetch` under `bounds`. The caller's own signal (the SDK's) still aborts it. The returned
 * Response's body errors with DeadlineExceeded, ResponseTooLarge or ConnectionLost; a body
 * that is never read is released when it is garbage-collected or cancelled.
 */
export function boundedFetch(bounds: FetchBounds, base: typeof fetch = fetch): typeof fetch {
  return async (input, init = {}) => {
    const ac = new AbortController();
    const outer = init.signal;
    const onOuter = () => ac.abort(outer?.reason);
    if (outer?.aborted) onOuter();
    else outer?.addEventListener('abort', onOuter, { once: true });
    const timer = setTimeout(
      () => ac.abort(new DeadlineExceeded(`no complete reply within ${bounds.deadlineMs} ms (the deadline covers connect, headers and body)`)),
      bounds.deadlineMs,
    );
    const done = () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    };
    let res: Response;
    try {
      res = await base(input, { ...init, signal: ac.signal });
    } catch (e) {
      done();
      throw ac.signal.aborted && ac.signal.reason instanceof DeadlineExceeded ? ac.signal.reason : e;
    }
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > bounds.maxBytes) {
      done();
      ac.abort(new ResponseTooLarge('size cap'));
      throw new ResponseTooLarge(`the response declares ${declared} bytes, above the cap of ${bounds.maxBytes} bytes`);
    }
    if (!res.body || NULL_BODY.has(res.status)) {
      done();
      return res;
    }
    const reader = res.body.getReader();
    let size = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (e) {
          done();
          const reason = ac.signal.reason as unknown;
          controller.error(
            reason instanceof DeadlineExceeded ? reason : new ConnectionLost(`the connection broke mid-body after ${size} bytes (${causeOf(e)})`),
          );
          return;
        }
        if (chunk.done) {
          done();
          controller.close();
          return;
        }
        size += chunk.value.byteLength;
        if (size > bounds.maxBytes) {
          done();
          ac.abort(new ResponseTooLarge('size cap'));
          controller.error(new ResponseTooLarge(`the response is larger than the cap of ${bounds.maxBytes} bytes (read ${size} so far)`));
          return;
        }
        controller.enqueue(chunk.value);
      },
      cancel(reason) {
        done();
        ac.abort(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/**
 * What a failed boundedFetch exchange was, for clients that report failures as values (the
 * search backend, the page reader): past the deadline, past the size cap, or a connection
 * that was refused or broke (`detail`: the socket's code, e.g. ECONNREFUSED).
 */
export function fetchFailure(e: unknown): { kind: 'timeout' | 'too_large' | 'network'; detail: string } {
  if (e instanceof DeadlineExceeded) return { kind: 'timeout', detail: e.message };
  if (e instanceof ResponseTooLarge) return { kind: 'too_large', detail: e.message };
  if (e instanceof ConnectionLost) return { kind: 'network', detail: e.message };
  return { kind: 'network', detail: causeOf(e) };
}

/** undici's "terminated" carries the socket error as its cause. */
function causeOf(e: unknown): string {
  const c = (e as { cause?: { code?: string; message?: string } })?.cause;
  return c?.code ?? c?.message ?? (e as Error)?.message ?? String(e);
}
