// The HTTP search backend (rollout/qref/http-search.ts) against a real node:http server on
// 127.0.0.1: GET and POST mappings (a generic API, Serper's shape, Elasticsearch's shape),
// and every bad reply as a failed search with its reason: 5xx/429/4xx, non-JSON, a reply that
// does not fit the mapping, a server that never answers, one that stalls mid-body, and a
// refused connection. No assertion on elapsed time: a hang must end as `timeout`.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpSearchSchema, type HttpSearchConfig } from '../../../configs/qref.ts';
import { HttpSearch } from '../../../rollout/qref/http-search.ts';
import { InputError } from '../../../util/errors.ts';

let server: Server;
let base: string;
const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const url = new URL(req.url ?? '/', 'http://x');
      switch (url.pathname) {
        case '/search': {
          const q = url.searchParams.get('q') ?? '';
          const k = Number(url.searchParams.get('k') ?? 10);
          const all = [1, 2, 3].map((i) => ({ id: `doc-${i}`, title: `${q} #${i}`, text: `text ${i}`, score: 10 - i }));
          return json(res, 200, { results: all.slice(0, k) });
        }
        case '/serper': {
          const b = JSON.parse(body) as { q: string; num: number };
          if (req.headers['x-api-key'] !== 'sk-test-123') return json(res, 401, { message: 'bad key' });
          return json(res, 200, {
            searchParameters: b,
            organic: [
              { link: 'https://a.example/1', title: `About ${b.q}`, snippet: 'first', position: 1 },
              { link: 'https://b.example/2', title: 'Second', snippet: 'second', position: 2 },
            ],
          });
        }
        case '/es/_search': {
          const b = JSON.parse(body) as { query: { match: { contents: string } }; size: number };
          return json(res, 200, { hits: { hits: [{ _id: 7, _score: 3.5, _source: { title: b.query.match.contents, text: `size ${b.size}` } }] } });
        }
        case '/503':
          return json(res, 503, { error: 'overloaded' });
        case '/429':
          return json(res, 429, { error: 'slow down' });
        case '/404':
          return json(res, 404, { error: 'no such index' });
        case '/html':
          res.writeHead(200, { 'content-type': 'text/html' });
          return res.end('<html>maintenance</html>');
        case '/not-array':
          return json(res, 200, { results: { id: 'x' } });
        case '/missing-title':
          return json(res, 200, {
            results: [
              { id: 'a', title: 'ok', text: 't', score: 1 },
              { id: 'b', text: 't', score: 1 },
            ],
          });
        case '/bad-score':
          return json(res, 200, { results: [{ id: 'a', title: 'ok', text: 't', score: 'high' }] });
        case '/hang':
          return; // never answers
        case '/stall':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.write('{"results": ['); // headers, then nothing
        case '/flood': {
          // chunked, no content-length: 3 MiB of results, past a 1 MiB cap only while arriving
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{"results": [');
          const item = JSON.stringify({ id: 'x', title: 't', text: 'y'.repeat(1000) });
          for (let i = 0; i < 3 * 1024; i++) res.write(`${i ? ',' : ''}${item}`);
          return res.end(']}');
        }
        case '/declared-huge':
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(64 * 2 ** 20) });
          return res.write('{'); // declares 64 MiB; refused on the header
        default:
          return json(res, 404, {});
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const cfg = (over: Partial<HttpSearchConfig> & { url: string }): HttpSearchConfig => HttpSearchSchema.parse(over);

describe('HttpSearch, well-formed replies', () => {
  it('GET: query and top-k in the query string, fields mapped, the API score kept', async () => {
    const s = new HttpSearch(cfg({ url: `${base}/search`, topKParam: 'k', score: 'score', timeoutMs: 5000 }));
    const r = await s.search('kestwick bridge & co', 2);
    expect(r).toEqual({
      ok: true,
      hits: [
        { id: 'doc-1', title: 'kestwick bridge & co #1', text: 'text 1', score: 9 },
        { id: 'doc-2', title: 'kestwick bridge & co #2', text: 'text 2', score: 8 },
      ],
    });
    expect(s.name).toBe(`http:127.0.0.1:${(server.address() as AddressInfo).port}`);
  });

  it("POST in Serper's shape: key from the environment in X-API-KEY, fixed body fields kept, 1/rank scores", async () => {
    const s = new HttpSearch(
      cfg({
        url: `${base}/serper`,
        method: 'POST',
        queryParam: 'q',
        topKParam: 'num',
        body: { gl: 'us' },
        apiKeyEnv: 'QREF_TEST_KEY',
        apiKeyHeader: 'X-API-KEY',
        apiKeyPrefix: '',
        results: 'organic',
        id: 'link',
        title: 'title',
        text: 'snippet',
        timeoutMs: 5000,
      }),
      { QREF_TEST_KEY: 'sk-test-123' },
    );
    const r = await s.search('Amos Kell', 5);
    expect(r).toEqual({
      ok: true,
      hits: [
        { id: 'https://a.example/1', title: 'About Amos Kell', text: 'first', score: 1 },
        { id: 'https://b.example/2', title: 'Second', text: 'second', score: 0.5 },
      ],
    });
    const req = seen.filter((x) => x.url === '/serper').at(-1)!;
    expect(JSON.parse(req.body)).toEqual({ gl: 'us', q: 'Amos Kell', num: 5 });
    expect(req.headers['content-type']).toBe('application/json');
  });

  it("POST in Elasticsearch's shape: nested body path, nested result paths, a numeric id", async () => {
    const s = new HttpSearch(
      cfg({
        url: `${base}/es/_search`,
        method: 'POST',
        queryParam: 'query.match.contents',
        topKParam: 'size',
        results: 'hits.hits',
        id: '_id',
        title: '_source.title',
        text: '_source.text',
        score: '_score',
        timeoutMs: 5000,
      }),
    );
    expect(await s.search('Sallow', 3)).toEqual({ ok: true, hits: [{ id: '7', title: 'Sallow', text: 'size 3', score: 3.5 }] });
  });

  it('a missing API key in the environment is a config error at construction', () => {
    expect(() => new HttpSearch(cfg({ url: `${base}/serper`, apiKeyEnv: 'QREF_TEST_UNSET' }), {})).toThrow(InputError);
    expect(() => new HttpSearch(cfg({ url: `${base}/serper`, apiKeyEnv: 'QREF_TEST_UNSET' }), {})).toThrow(/QREF_TEST_UNSET/);
  });

  it('a bad mapping path is a config error at construction', () => {
    expect(() => new HttpSearch(cfg({ url: `${base}/search`, results: 'hits..hits' }))).toThrow(/qref\.search\.http\.results/);
  });
});

describe('HttpSearch, bad replies become failed searches', () => {
  const at = (path: string, over: Partial<HttpSearchConfig> = {}) => new HttpSearch(cfg({ url: `${base}${path}`, timeoutMs: 5000, ...over }));

  it('5xx and 429 are transient http_status failures; 4xx is not transient', async () => {
    expect(await at('/503').search('x', 3)).toMatchObject({
      ok: false,
      reason: 'http_status',
      transient: true,
      detail: expect.stringMatching(/HTTP 503.*overloaded/),
    });
    expect(await at('/429').search('x', 3)).toMatchObject({ ok: false, reason: 'http_status', transient: true });
    expect(await at('/404').search('x', 3)).toMatchObject({ ok: false, reason: 'http_status', transient: false, detail: expect.stringMatching(/HTTP 404/) });
  });

  it('a body that is not JSON is not_json, with the start of the body', async () => {
    expect(await at('/html').search('x', 3)).toMatchObject({
      ok: false,
      reason: 'not_json',
      transient: false,
      detail: expect.stringContaining('<html>maintenance'),
    });
  });

  it('JSON that does not fit the mapping is bad_shape, naming the path', async () => {
    expect(await at('/not-array').search('x', 3)).toMatchObject({
      ok: false,
      reason: 'bad_shape',
      detail: expect.stringMatching(/^results: expected an array/),
    });
    expect(await at('/missing-title').search('x', 3)).toMatchObject({
      ok: false,
      reason: 'bad_shape',
      detail: expect.stringMatching(/^results\[1\]\.title: expected a string, got nothing/),
    });
    expect(await at('/bad-score', { score: 'score' }).search('x', 3)).toMatchObject({
      ok: false,
      reason: 'bad_shape',
      detail: expect.stringMatching(/^results\[0\]\.score: expected a finite number/),
    });
    expect(await at('/search', { id: 'uuid' }).search('x', 3)).toMatchObject({
      ok: false,
      reason: 'bad_shape',
      detail: expect.stringMatching(/^results\[0\]\.uuid/),
    });
  });

  it('a server that never answers is a transient timeout', async () => {
    expect(await at('/hang', { timeoutMs: 200 }).search('x', 3)).toMatchObject({ ok: false, reason: 'timeout', transient: true });
  });

  it('a reply that stalls after its headers is a timeout too', async () => {
    expect(await at('/stall', { timeoutMs: 200 }).search('x', 3)).toMatchObject({ ok: false, reason: 'timeout', transient: true });
  });

  it('a reply past maxResponseMb is too_large and not transient, whether declared or only while streaming', async () => {
    expect(await at('/flood', { maxResponseMb: 1 }).search('x', 3)).toMatchObject({
      ok: false,
      reason: 'too_large',
      transient: false,
      detail: expect.stringMatching(/larger than the cap of 1048576 bytes.*maxResponseMb 1/),
    });
    expect(await at('/declared-huge', { maxResponseMb: 1 }).search('x', 3)).toMatchObject({
      ok: false,
      reason: 'too_large',
      detail: expect.stringMatching(/declares 67108864 bytes/),
    });
    // the same flood under the default cap (8 MiB) is read whole and mapped
    expect(await at('/flood').search('x', 3)).toMatchObject({ ok: true, hits: [{ id: 'x' }, { id: 'x' }, { id: 'x' }] });
  });

  it('a refused connection is a transient network failure', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const s = new HttpSearch(cfg({ url: `http://127.0.0.1:${port}/search`, timeoutMs: 5000 }));
    expect(await s.search('x', 3)).toMatchObject({ ok: false, reason: 'network', transient: true, detail: expect.stringMatching(/ECONNREFUSED/) });
  });
});
