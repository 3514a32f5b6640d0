// The per-endpoint concurrency cap, measured at the server: the fake vLLM holds every answer
// until the test releases it, so a broken cap would show all calls in flight at once.
import { afterEach, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../endpoints/endpoint.ts';
import { startFakeVllm, type FakeVllm } from '../helpers/fake-vllm.ts';
import { options, recordingDeps } from './helpers.ts';

let server: FakeVllm | null = null;
afterEach(async () => void (await server?.close()));

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5)); // bounded by the test timeout
}

describe('concurrency cap', () => {
  it('never has more than `concurrency` requests in flight, retries included', async () => {
    server = await startFakeVllm({ answer: (_r, n) => `answer ${n}`, serverError: { on: [0, 4] } });
    server.hold();
    const ep = createEndpoint(options(server.baseUrl, { concurrency: 3 }), recordingDeps());
    const calls = Array.from({ length: 10 }, (_, i) => ep.chat({ messages: [{ role: 'user', content: `q${i}` }] }));
    await until(() => server!.inFlight >= 3);
    for (let released = 0; released < 12; released++) {
      server.release(1);
      await until(() => server!.inFlight >= Math.min(3, 12 - released - 1));
    }
    server.releaseAll();
    const replies = await Promise.all(calls);
    expect(replies).toHaveLength(10);
    expect(server.requests.length).toBe(12); // 10 calls + 2 retries of the 5xx answers
    expect(server.maxInFlight).toBe(3);
  });

  it('separate endpoint objects have separate caps', async () => {
    server = await startFakeVllm({});
    server.hold();
    const a = createEndpoint(options(server.baseUrl, { concurrency: 1 }), recordingDeps());
    const b = createEndpoint(options(server.baseUrl, { concurrency: 1, role: 'judge' }), recordingDeps());
    const calls = [a, a, b, b].map((ep, i) => ep.chat({ messages: [{ role: 'user', content: `q${i}` }] }));
    await until(() => server!.inFlight >= 2);
    server.releaseAll();
    await Promise.all(calls);
    expect(server.maxInFlight).toBe(2);
  });
});
