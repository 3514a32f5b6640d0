// The visit tool V(u_t) (the QREF paper, method §13.5: "a visit tool powered by the Jina Reader API for
// webpage retrieval and parsing"). Two implementations of one interface (types.ts Reader):
//   - CorpusReader, embedded: the page of a corpus document is its title and whole text, by id
//     (the ids the embedded BM25 backend returns);
//   - HttpReader: GET `prefix + url` (Jina Reader: prefix https://r.jina.ai/, the page as text),
//     the reply's body as the page; the key from the environment as a header, never logged.
// A read never throws for what the page or the server does: no such page, a timeout, a refused
// or broken connection, a page past maxResponseMb (not read further) or a non-2xx status is
// `ok: false` with the reason, an observation for the agent. The exchange goes through the
// endpoints layer's boundedFetch (one deadline from connect to the last byte, a size cap).
import type { CorpusDoc } from '../../data/qref/schema.ts';
import { boundedFetch, fetchFailure, mib } from '../../endpoints/index.ts';
import { InputError } from '../../util/errors.ts';
import type { ReadOutcome, Reader } from './types.ts';

export class CorpusReader implements Reader {
  readonly name = 'corpus';
  private readonly byId: Map<string, CorpusDoc>;
  constructor(corpus: readonly CorpusDoc[]) {
    this.byId = new Map(corpus.map((d) => [d.id, d]));
  }
  async read(url: string): Promise<ReadOutcome> {
    const d = this.byId.get(url.trim());
    return d ? { ok: true, url: d.id, title: d.title, text: d.text } : { ok: false, reason: 'not_found', detail: `no corpus document has id "${url}"` };
  }
}

export interface HttpReaderConfig {
  /** Prepended to the URL to read (Jina Reader: https://r.jina.ai/). */
  prefix: string;
  timeoutMs: number;
  /** A page larger than this many MiB is a failed read (`too_large`). */
  maxResponseMb: number;
  apiKeyEnv?: string;
  apiKeyHeader: string;
  apiKeyPrefix: string;
}

export class HttpReader implements Reader {
  readonly name: string;
  private readonly headers: Record<string, string> = { accept: 'text/plain, text/markdown, */*' };
  constructor(
    private readonly cfg: HttpReaderConfig,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.name = `http:${new URL(cfg.prefix).host}`;
    if (cfg.apiKeyEnv !== undefined) {
      const key = env[cfg.apiKeyEnv];
      if (!key) throw new InputError(`the reader's apiKeyEnv names ${cfg.apiKeyEnv}, which is not set in the environment; export it or remove apiKeyEnv`);
      this.headers[cfg.apiKeyHeader] = `${cfg.apiKeyPrefix}${key}`;
    }
  }
  async read(url: string): Promise<ReadOutcome> {
    const get = boundedFetch({ deadlineMs: this.cfg.timeoutMs, maxBytes: mib(this.cfg.maxResponseMb) });
    try {
      const res = await get(`${this.cfg.prefix}${url}`, { headers: this.headers });
      const text = await res.text(); // under the same deadline and cap: a body that stalls or floods fails too
      if (!res.ok) return { ok: false, reason: 'http_status', detail: `${this.name} answered HTTP ${res.status} for ${url}` };
      const title = /^Title: (.+)$/m.exec(text)?.[1]?.trim() ?? url; // Jina Reader's first line
      return { ok: true, url, title, text };
    } catch (e) {
      const f = fetchFailure(e);
      if (f.kind === 'timeout') return { ok: false, reason: 'timeout', detail: `no complete reply from ${this.name} within ${this.cfg.timeoutMs} ms` };
      return { ok: false, reason: f.kind, detail: `${this.name}: ${f.detail} for ${url}` };
    }
  }
}
