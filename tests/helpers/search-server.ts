// A local search API and page reader for the agent tests: a real node:http server on 127.0.0.1
// (port 0) in front of the embedded BM25 index (rollout/qref/bm25.ts) over a given corpus.
//   GET /search?q=QUERY&num=K  -> {"organic": [{"link", "title", "snippet", "score"}]} (Serper's
//                                 field names; the agent's config maps them: results organic,
//                                 id link, text snippet, score score)
//   GET /read/<id>             -> text/plain "Title: <title>\n\n<text>" (Jina Reader's shape), 404
//                                 for an unknown id
// `failQueries`: queries answered with HTTP 500. `requests` lists every request (path, query).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Bm25Search } from '../../rollout/qref/bm25.ts';
import type { CorpusDoc } from '../../data/qref/schema.ts';

export interface SearchServer {
  url: string;
  requests: { path: string; query: string | null }[];
  close(): Promise<void>;
}

export async function startSearchServer(corpus: readonly CorpusDoc[], o: { failQueries?: string[] } = {}): Promise<SearchServer> {
  const bm25 = new Bm25Search(corpus);
  const byId = new Map(corpus.map((d) => [d.id, d]));
  const requests: SearchServer['requests'] = [];
  const server = createServer(async (req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const q = u.searchParams.get('q');
    requests.push({ path: u.pathname, query: q });
    if (u.pathname === '/search' && q !== null) {
      if (o.failQueries?.includes(q)) return void res.writeHead(500).end('search backend down');
      const out = await bm25.search(q, Number(u.searchParams.get('num') ?? 10));
      const organic = out.ok ? out.hits.map((h) => ({ link: h.id, title: h.title, snippet: h.text, score: h.score })) : [];
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ organic }));
    }
    const doc = u.pathname.startsWith('/read/') ? byId.get(decodeURIComponent(u.pathname.slice('/read/'.length))) : undefined;
    if (doc) return void res.writeHead(200, { 'content-type': 'text/plain' }).end(`Title: ${doc.title}\n\n${doc.text}`);
    res.writeHead(404).end('not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) };
}
