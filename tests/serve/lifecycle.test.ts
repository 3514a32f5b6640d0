// Server lifecycle: API key, graceful close with a request in flight, client disconnect,
// and `gsteer serve` as a child process stopped by SIGTERM.
import { spawn } from 'node:child_process';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../serve/server.ts';
import { makeTinyModel, TINY_CONTEXT } from './tiny-model.ts';
import { waitInFlight } from './wait.ts';

let tiny: ReturnType<typeof makeTinyModel>;
beforeAll(() => {
  tiny = makeTinyModel();
});
afterAll(() => tiny?.cleanup());

const body = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'tiny', prompt: [9707, 11, 1879], max_tokens: 30, ignore_eos: true, seed: 1, ...extra });

describe('server lifecycle', () => {
  it('checks the API key on /v1 routes only', async () => {
    const server = await startServer({ modelDir: tiny.dir, servedModelName: 'tiny', backend: 'wasm', apiKey: 'sekret' });
    try {
      const bad = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
      const e = await bad.models.list().catch((x) => x);
      expect(e).toBeInstanceOf(OpenAI.AuthenticationError);
      const good = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sekret', maxRetries: 0 });
      expect((await good.models.list()).data[0]?.id).toBe('tiny');
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('a port in use is an InputError that says what to do', async () => {
    const first = await startServer({ modelDir: tiny.dir, backend: 'wasm' });
    try {
      const port = Number(new URL(first.url).port);
      await expect(startServer({ modelDir: tiny.dir, backend: 'wasm', port })).rejects.toThrow(`port ${port} on 127.0.0.1 is in use; pick another --port`);
    } finally {
      await first.close();
    }
  });

  it('close() lets the in-flight request finish, then refuses connections', async () => {
    const server = await startServer({ modelDir: tiny.dir, servedModelName: 'tiny', backend: 'wasm' });
    const inflight = fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body({ max_tokens: 60 }) });
    await waitInFlight(server.url);
    await server.close();
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(60);
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });

  it('cancels the generation when the client disconnects', async () => {
    const server = await startServer({ modelDir: tiny.dir, servedModelName: 'tiny', backend: 'wasm' });
    try {
      const maxTokens = TINY_CONTEXT - 3; // the longest the 3-token prompt allows
      const ctl = new AbortController();
      const p = fetch(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body({ max_tokens: maxTokens }),
        signal: ctl.signal,
      });
      await waitInFlight(server.url);
      ctl.abort();
      await expect(p).rejects.toThrow();
      // The scheduler drops the sequence at its next step; poll (up to the test's timeout)
      // until nothing is in flight, then count: it stopped short of max_tokens (a count, not a
      // time: without the cancel the sequence would run to max_tokens before leaving).
      for (;;) {
        const h = (await (await fetch(`${server.url}/health`)).json()) as { in_flight: number };
        if (h.in_flight === 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const generated = Number(/^gsteer_serve:generation_tokens_total (\d+)$/m.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1]);
      expect(generated).toBeGreaterThanOrEqual(1); // it was decoding (waitInFlight)
      expect(generated).toBeLessThan(maxTokens);
    } finally {
      await server.close();
    }
  });

  it('`gsteer serve` prints its URL, serves, and exits 0 on SIGTERM', async () => {
    const proc = spawn(process.execPath, ['cli/gsteer.mjs', 'serve', '--model', tiny.dir, '--port', '0', '--backend', 'wasm'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      proc.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening on (\S+)/.exec(out);
        if (m) resolve(m[1] as string);
      });
      proc.on('exit', (code) => reject(new Error(`exited ${code} before listening`)));
    });
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data[0]?.id).toBe(tiny.dir); // like vLLM: the --model path is the served name
    const code = await new Promise<number | null>((resolve) => {
      proc.on('exit', (c) => resolve(c));
      proc.kill('SIGTERM');
    });
    expect(code).toBe(0);
  }, 60_000);
});
