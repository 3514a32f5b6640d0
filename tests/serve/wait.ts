// Polls the server's /health until `in_flight` reaches `atLeast` sequences: tests that
// race an action against a live request must know the request is decoding (a fixed sleep
// is not enough on a loaded machine).
export async function waitInFlight(url: string, atLeast = 1, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const h = (await (await fetch(`${url}/health`)).json()) as { in_flight: number };
    if (h.in_flight >= atLeast) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`no request in flight on ${url} after ${timeoutMs} ms`);
}
