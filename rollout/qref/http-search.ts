// The real search backend: any JSON search API (the paper used Serper; Elasticsearch and a
// Pyserini HTTP server fit the same mapping). configs/qref.ts `HttpSearchSchema` says how a
// query becomes a request and how the reply's JSON becomes {id, title, text, score}.
// Failures are values (search.ts): a timeout (the whole exchange, connect to last byte,
// bounded by timeoutMs), a refused or broken connection, a body past maxResponseMb (not read
// further), a non-2xx status, a body that is not JSON, or JSON that does not fit the mapping
// each become `ok: false` with the reason and detail. The exchange goes through the endpoints
// layer's boundedFetch, as every other HTTP client of gsteer. Transient ones (timeout,
// network, 5xx, 429) are flagged for the caller's retry rule.
// The API key comes from the environment and never appears in a detail or a log.
import type { HttpSearchConfig } from '../../configs/qref.ts';
import { boundedFetch, fetchFailure, mib } from '../../endpoints/index.ts';
import { InputError } from '../../util/errors.ts';
import { getPath, parsePath, pathLabel, setPath, type PathStep } from './json-path.ts';
import type { SearchBackend, SearchFailure, SearchHit, SearchOutcome } from './search.ts';

const fail = (reason: SearchFailure, detail: string, transient: boolean): SearchOutcome => ({ ok: false, reason, detail, transient });
const shorten = (s: string) => (s.length > 200 ? `${s.slice(0, 197)}...` : s);

interface Mapping {
  query: PathStep[];
  topK: PathStep[] | null;
  results: PathStep[];
  id: PathStep[];
  title: PathStep[];
  text: PathStep[];
  score: PathStep[] | null;
}

export class HttpSearch implements SearchBackend {
  readonly name: string;
  private readonly map: Mapping;
  private readonly headers: Record<string, string>;

  constructor(
    private readonly cfg: HttpSearchConfig,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.name = `http:${new URL(cfg.url).host}`;
    const path = (key: keyof HttpSearchConfig, value: string) => {
      try {
        return parsePath(value);
      } catch (e) {
        throw new InputError(`qref.search.http.${key}: ${(e as Error).message}; write dotted keys with [n] indices, e.g. hits.hits or _source.title`);
      }
    };
    this.map = {
      query: path('queryParam', cfg.queryParam),
      topK: cfg.topKParam === undefined ? null : path('topKParam', cfg.topKParam),
      results: path('results', cfg.results),
      id: path('id', cfg.id),
      title: path('title', cfg.title),
      text: path('text', cfg.text),
      score: cfg.score === undefined ? null : path('score', cfg.score),
    };
    this.headers = { accept: 'application/json', ...cfg.headers };
    if (cfg.method === 'POST') this.headers['content-type'] = 'application/json';
    if (cfg.apiKeyEnv !== undefined) {
      const key = env[cfg.apiKeyEnv];
      if (!key) throw new InputError(`qref.search.http.apiKeyEnv names ${cfg.apiKeyEnv}, which is not set in the environment; export it or remove apiKeyEnv`);
      this.headers[cfg.apiKeyHeader] = `${cfg.apiKeyPrefix}${key}`;
    }
  }

  private request(query: string, topK: number): { url: string; init: RequestInit } {
    if (this.cfg.method === 'GET') {
      const url = new URL(this.cfg.url);
      url.searchParams.set(this.cfg.queryParam, query);
      if (this.cfg.topKParam !== undefined) url.searchParams.set(this.cfg.topKParam, String(topK));
      return { url: url.toString(), init: { method: 'GET', headers: this.headers } };
    }
    const body = structuredClone(this.cfg.body) as Record<string, unknown>;
    setPath(body, this.map.query, query);
    if (this.map.topK) setPath(body, this.map.topK, topK);
    return { url: this.cfg.url, init: { method: 'POST', headers: this.headers, body: JSON.stringify(body) } };
  }

  async search(query: string, topK: number): Promise<SearchOutcome> {
    const { url, init } = this.request(query, topK);
    const get = boundedFetch({ deadlineMs: this.cfg.timeoutMs, maxBytes: mib(this.cfg.maxResponseMb) });
    let status: number;
    let text: string;
    try {
      const res = await get(url, init);
      status = res.status;
      text = await res.text(); // under the same deadline and cap: a reply that stalls or floods mid-body fails too
    } catch (e) {
      const f = fetchFailure(e);
      if (f.kind === 'timeout') return fail('timeout', `no complete reply from ${this.name} within ${this.cfg.timeoutMs} ms`, true);
      if (f.kind === 'too_large')
        return fail(
          'too_large',
          `${this.name}: ${f.detail} (qref.search.http.maxResponseMb ${this.cfg.maxResponseMb}); raise it if the API's replies are this large`,
          false,
        );
      return fail('network', `${this.name}: ${f.detail}`, true);
    }
    if (status < 200 || status > 299) return fail('http_status', `${this.name} answered HTTP ${status}: ${shorten(text)}`, status >= 500 || status === 429);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return fail('not_json', `${this.name} answered HTTP ${status} with a body that is not JSON: ${shorten(text)}`, false);
    }
    return this.hits(json, topK);
  }

  /** The reply's results through the mapping; the first misfit fails the whole search. */
  private hits(json: unknown, topK: number): SearchOutcome {
    const list = getPath(json, this.map.results);
    if (!Array.isArray(list))
      return fail('bad_shape', `${this.cfg.results}: expected an array of results, got ${describe(list)}; fix qref.search.http.results`, false);
    const hits: SearchHit[] = [];
    for (let i = 0; i < Math.min(list.length, topK); i++) {
      const item = list[i];
      const id = getPath(item, this.map.id);
      const title = getPath(item, this.map.title);
      const text = getPath(item, this.map.text);
      const score = this.map.score ? getPath(item, this.map.score) : 1 / (i + 1);
      if (!(typeof id === 'string' && id) && typeof id !== 'number')
        return fail('bad_shape', `${pathLabel(this.cfg.results, i, this.cfg.id)}: expected a non-empty string or a number, got ${describe(id)}`, false);
      if (typeof title !== 'string')
        return fail('bad_shape', `${pathLabel(this.cfg.results, i, this.cfg.title)}: expected a string, got ${describe(title)}`, false);
      if (typeof text !== 'string')
        return fail('bad_shape', `${pathLabel(this.cfg.results, i, this.cfg.text)}: expected a string, got ${describe(text)}`, false);
      if (typeof score !== 'number' || !Number.isFinite(score))
        return fail('bad_shape', `${pathLabel(this.cfg.results, i, this.cfg.score ?? 'score')}: expected a finite number, got ${describe(score)}`, false);
      hits.push({ id: String(id), title, text, score });
    }
    return { ok: true, hits };
  }
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing (missing)';
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
