// node:http front of gsteer's Tinker-API server: the API key (X-API-Key, as the SDK sends it,
// or Authorization: Bearer; compared in constant time, never logged), the body (capped;
// Content-Encoding zstd inflated; application/x-protobuf kept as bytes, anything else parsed
// as JSON), routing by the ROUTES table (unknown path 404, wrong method 405), and the reply:
// JSON, or protobuf bytes for results the client asked for with Accept: application/x-protobuf.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InputError } from '../../util/errors.ts';
import { zstdDecompress } from '../tinker/zstd.ts';
import { ServiceError } from './errors.ts';
import type { Reply, Request } from './request.ts';
import { ROUTES } from './routes.ts';
import type { ServiceState } from './state.ts';

export const PROTO = 'application/x-protobuf';

async function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new ServiceError(413, `request body is larger than ${max} bytes; send fewer datums per request`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function keyMatches(req: IncomingMessage, key: string): boolean {
  const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  const sent = Buffer.from(String(req.headers['x-api-key'] ?? bearer ?? ''));
  const want = Buffer.from(key);
  return sent.length === want.length && timingSafeEqual(sent, want);
}

async function parseRequest(req: IncomingMessage, state: ServiceState, path: string): Promise<Request> {
  let raw = req.method === 'POST' ? await readBody(req, state.opts.maxBodyBytes ?? 256 * 2 ** 20) : Buffer.alloc(0);
  const encoding = String(req.headers['content-encoding'] ?? '').toLowerCase();
  if (encoding === 'zstd') raw = Buffer.from(zstdDecompress(raw, state.opts.maxBodyBytes ?? 256 * 2 ** 20, `${path} body`));
  else if (encoding && encoding !== 'identity') throw new ServiceError(415, `Content-Encoding ${encoding} is not supported; send zstd or no encoding`);
  const isProto = String(req.headers['content-type'] ?? '').startsWith(PROTO);
  let json: unknown = {};
  if (!isProto && raw.length) {
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch (e) {
      throw new InputError(`${path}: the body is not valid JSON (${(e as Error).message}); send a JSON object or Content-Type ${PROTO}`);
    }
  }
  return {
    path,
    json,
    proto: isProto ? raw : null,
    bytesIn: raw.length,
    idempotencyKey: (req.headers['x-idempotency-key'] as string | undefined) || null,
    acceptProto: String(req.headers.accept ?? '').includes(PROTO),
  };
}

function send(res: ServerResponse, status: number, reply: Reply): void {
  if (res.destroyed || res.headersSent) return;
  if (reply.proto) {
    res.writeHead(status, { 'content-type': PROTO, 'content-length': reply.proto.length });
    res.end(reply.proto);
    return;
  }
  const body = JSON.stringify(reply.json ?? {});
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function httpHandler(state: ServiceState) {
  const { apiKey, log } = state.opts;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = Date.now();
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    let status = 200;
    try {
      const methods = ROUTES[path] ?? ROUTES[path.replace(/\/[^/]+$/, '/{id}')];
      if (!methods)
        throw new ServiceError(404, `no route ${req.method} ${path}; gsteer's trainer service serves the Tinker API under /api/v1 (trainer/tinker/README.md)`);
      const handler = methods[req.method as 'GET' | 'POST'];
      if (!handler) {
        res.setHeader('allow', Object.keys(methods).join(', '));
        throw new ServiceError(405, `${req.method} is not allowed on ${path}; use ${Object.keys(methods).join(', ')}`);
      }
      if (apiKey && path !== '/api/v1/healthz' && !keyMatches(req, apiKey))
        throw new ServiceError(401, 'missing or wrong API key; send X-API-Key: <key> (the Tinker SDK sends $TINKER_API_KEY)');
      const reply = await handler(state, await parseRequest(req, state, path));
      status = reply.status ?? 200;
      send(res, status, reply);
    } catch (e) {
      const known = e instanceof ServiceError ? e : e instanceof InputError ? new ServiceError(400, e.message) : null;
      if (!known) log?.(`error in ${req.method} ${path}: ${(e as Error)?.stack ?? e}`);
      status = known?.status ?? 500;
      const detail = known?.message ?? `internal error: ${(e as Error)?.message ?? e}`;
      // {detail} as FastAPI (Tinker's servers) writes it; {error: {message}} as OpenAI-style clients read it
      send(res, status, { json: { detail, error: { message: detail, code: status } } });
    }
    if (state.opts.logRequests) log?.(`${req.method} ${path} ${status} ${Date.now() - started}ms`);
  };
}
