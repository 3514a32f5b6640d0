// gsteer serve safe by default (issue 32 item 4), over real HTTP against the prefix-hash
// model (no tfjs): a text/plain or untyped POST (what a web page can send without asking)
// is 415 and loads nothing; a Host that is not loopback is 403 without a key; with a key,
// no key is 401; a non-loopback bind without a key is refused before anything listens;
// lora_path outside the allowed roots is 403; prompts x n over the cap is 400; and a 15 MB
// prompt is refused before the tokenizer sees it while /health keeps answering (counted:
// every probe sent while the big requests are in flight answers 200; no clock involved).
import { request } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qwen3Tokenizer, type Tokenizer } from '../../core/tokenizer.ts';
import { startServer, type RunningServer } from '../../serve/server.ts';
import { prefixHashModel } from './prefix-hash-model.ts';

const root = mkdtempSync(join(tmpdir(), 'gsteer-serve-sec-'));
const allowed = join(root, 'adapters');
mkdirSync(join(allowed, 'a'), { recursive: true });
symlinkSync('/etc', join(allowed, 'escape'));

/** The Qwen3 tokenizer, counting the UTF-8 bytes it is asked to encode. */
const real = qwen3Tokenizer();
let tokenizedBytes = 0;
const counting: Tokenizer = {
  ...real,
  encode: (t) => ((tokenizedBytes += Buffer.byteLength(t)), real.encode(t)),
  decode: real.decode,
  vocabSize: real.vocabSize,
};

let open: RunningServer;
let keyed: RunningServer;
const KEY = 'k'.repeat(32);

beforeAll(async () => {
  open = await startServer({
    model: prefixHashModel({ maxContext: 4096 }),
    servedModelName: 'base',
    tokenizer: counting,
    loraRoots: [allowed],
    maxChoices: 128,
  });
  keyed = await startServer({ model: prefixHashModel(), servedModelName: 'base', apiKey: KEY });
});
afterAll(async () => {
  await open?.close();
  await keyed?.close();
  rmSync(root, { recursive: true, force: true });
});

/** One HTTP request with any headers (fetch may not set Host). */
function send(
  base: string,
  path: string,
  o: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<{ status: number; body: string }> {
  const u = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: o.method ?? 'GET', headers: o.headers ?? {} }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}
const json = { 'content-type': 'application/json' };
const models = async (s: RunningServer) => (JSON.parse((await send(s.url, '/v1/models')).body) as { data: { id: string }[] }).data.map((m) => m.id);

describe('requests a web page can make are refused', () => {
  it('text/plain and untyped POSTs are 415 and load nothing; the same body as JSON works', async () => {
    const body = JSON.stringify({ lora_name: 'a', lora_path: join(allowed, 'a') });
    for (const headers of [{ 'content-type': 'text/plain;charset=UTF-8' }, { 'content-type': 'application/x-www-form-urlencoded' }, {}] as Record<
      string,
      string
    >[]) {
      const r = await send(open.url, '/v1/load_lora_adapter', { method: 'POST', headers, body });
      expect(r.status).toBe(415);
      expect(r.body).toContain('send the body as JSON with Content-Type: application/json');
    }
    expect(await models(open)).toEqual(['base']);
    const ok = await send(open.url, '/v1/load_lora_adapter', { method: 'POST', headers: json, body });
    expect(ok.status, ok.body).toBe(200);
    expect(await models(open)).toEqual(['base', 'a']);
    expect(
      (await send(open.url, '/v1/unload_lora_adapter', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"lora_name":"a"}' })).status,
    ).toBe(415);
    expect(await models(open)).toEqual(['base', 'a']);
  });

  it('without a key: a Host that is not loopback is 403 (DNS rebinding), on every route', async () => {
    for (const path of ['/v1/models', '/health', '/metrics']) {
      const r = await send(open.url, path, { headers: { host: 'evil.example:80' } });
      expect(r.status).toBe(403);
      expect(r.body).toContain('is not a loopback host');
    }
    expect((await send(open.url, '/v1/models', { headers: { host: 'localhost:1' } })).status).toBe(200);
  });

  it('with a key: no key or a wrong one is 401, the key works from any Host', async () => {
    expect((await send(keyed.url, '/v1/models')).status).toBe(401);
    expect((await send(keyed.url, '/v1/models', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const r = await send(keyed.url, '/v1/models', { headers: { authorization: `Bearer ${KEY}`, host: 'gpu-box.lan:8000' } });
    expect(r.status).toBe(200);
  });

  it('a bind beyond loopback without a key is refused before anything listens', async () => {
    await expect(startServer({ model: prefixHashModel(), host: '0.0.0.0' })).rejects.toThrow(/--host 0\.0\.0\.0 would serve the policy .* without an API key/);
  });

  it('lora_path outside the allowed roots (or escaping them by a symlink) is 403', async () => {
    for (const path of ['/etc', join(allowed, '..'), join(allowed, 'escape')]) {
      const r = await send(open.url, '/v1/load_lora_adapter', { method: 'POST', headers: json, body: JSON.stringify({ lora_name: 'x', lora_path: path }) });
      expect(r.status).toBe(403);
      expect(r.body).toContain('is outside the folders this server loads adapters from');
    }
  });
});

describe('request sizes are checked before the work', () => {
  it('200 prompts x n 64 is refused (prompts x n cap), naming the limit', async () => {
    const r = await send(open.url, '/v1/completions', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ model: 'base', prompt: Array.from({ length: 100 }, () => [1, 2]), n: 64, max_tokens: 1 }),
    });
    expect(r.status).toBe(400);
    expect(r.body).toContain('100 prompt(s) x n 64 = 6400 choices, above this server');
  });

  it('a 15 MB prompt is refused before tokenization while /health keeps answering (answers counted)', async () => {
    const big = JSON.stringify({ model: 'base', prompt: 'hello world '.repeat(1_250_000), max_tokens: 1 }); // 15 MB
    const chat = JSON.stringify({ model: 'base', messages: [{ role: 'user', content: 'x'.repeat(15_000_000) }] });
    tokenizedBytes = 0;
    let inFlight = 3;
    const bigs = [big, chat, big].map((b, i) =>
      send(open.url, i === 1 ? '/v1/chat/completions' : '/v1/completions', { method: 'POST', headers: json, body: b }).finally(() => inFlight--),
    );
    // probe /health while the big requests are in flight (at least 20 probes, each after the last answered)
    const health: number[] = [];
    while (inFlight > 0 || health.length < 20) health.push((await send(open.url, '/health')).status);
    const answers = await Promise.all(bigs);
    expect(answers.map((a) => a.status)).toEqual([400, 400, 400]);
    expect(answers[0]!.body).toContain("prompt is 15000000 bytes, above this server's limit of 65536 bytes");
    expect(answers[1]!.body).toContain('messages (all contents together) is 15000000 bytes');
    expect(health.length).toBeGreaterThanOrEqual(20);
    expect(health.every((s) => s === 200)).toBe(true);
    expect(tokenizedBytes).toBe(0); // the tokenizer never saw them
  });
});
