// node:http front: check who is asking (the Host header names a loopback host when no key
// is set, so a web page elsewhere cannot reach it through DNS rebinding; the API key when one
// is), refuse any POST body that is not JSON (415: a browser page can send text/plain,
// form or untyped bodies to any address without asking, never application/json), read and
// parse it, route by the ROUTES table (unknown path 404, known path with the wrong method 405),
// turn errors into OpenAI's error shape, and cancel a request's generation when its client
// disconnects.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, badRequest } from './errors.ts';
import type { Body } from './fields.ts';
import { ROUTES, type Reply, type ServerState } from './routes.ts';

/** Prompts are at most a few hundred KB of ids; anything much larger is a mistake. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface HttpOptions {
  /** When set, /v1/* requests must send `Authorization: Bearer <key>` (the key is never logged); when not, the Host must be loopback. */
  apiKey?: string;
  log?: (line: string) => void;
  /** One line per request ("POST /v1/completions 200 12ms"); false logs errors only (vLLM's --disable-log-requests). */
  logRequests?: boolean;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, `request body is larger than ${MAX_BODY_BYTES} bytes; send a shorter prompt`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): Body {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw badRequest(`request body is not valid JSON (${(e as Error).message}); send a JSON object`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badRequest('request body must be a JSON object');
  return v as Body;
}

function send(res: ServerResponse, status: number, reply: Reply): void {
  if (res.destroyed || res.headersSent) return;
  const isText = reply.text !== undefined;
  const payload = isText ? (reply.text as string) : JSON.stringify(reply.json ?? {});
  res.writeHead(status, { 'content-type': isText ? (reply.contentType ?? 'text/plain; charset=utf-8') : 'application/json' });
  res.end(payload);
}

/**
 * Server-sent events: `data: <json>` per chunk, then `data: [DONE]`. An error after the
 * stream started cannot change the status any more; it is sent as an `{error}` event.
 */
async function sendEvents(res: ServerResponse, sse: NonNullable<Reply['sse']>, log?: (line: string) => void): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const write = (data: unknown) => {
    if (!res.destroyed) res.write(`data: ${JSON.stringify(data)}\n\n`);
  };
  try {
    await sse(write);
  } catch (e) {
    const err = e instanceof ApiError ? e : new ApiError(500, `internal error: ${(e as Error).message}`, 'internal_server_error');
    if (!res.destroyed) log?.(`error in a stream: ${(e as Error).stack ?? e}`);
    write(err.body());
  }
  if (!res.destroyed) res.end('data: [DONE]\n\n');
}

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i;
/** Hostname of a Host header (`127.0.0.1:8000` -> `127.0.0.1`, `[::1]:8000` -> `[::1]`). */
const hostOf = (h: string) => (h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : (h.split(':')[0] ?? ''));
// SHA-256 first so both sides have one length, as timingSafeEqual needs.
const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

function checkAuth(req: IncomingMessage, path: string, apiKey: string | undefined): void {
  if (!apiKey) {
    if (!LOOPBACK.test(hostOf(req.headers.host ?? '')))
      throw new ApiError(
        403,
        `Host "${req.headers.host ?? ''}" is not a loopback host; without an API key gsteer serve answers only requests addressed to 127.0.0.1 or localhost (start it with --api-key-env VAR to serve other hosts)`,
        'authentication_error',
      );
    return;
  }
  if (!path.startsWith('/v1/')) return;
  const auth = req.headers.authorization ?? '';
  if (!timingSafeEqual(digest(auth), digest(`Bearer ${apiKey}`)))
    throw new ApiError(401, 'missing or wrong API key; send Authorization: Bearer <key>', 'authentication_error');
}

/** application/json, with or without parameters (charset=utf-8). */
function checkJsonBody(req: IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json')
    throw new ApiError(
      415,
      `Content-Type ${type ? `"${type}"` : '(none)'} is not accepted; send the body as JSON with Content-Type: application/json`,
      'invalid_request_error',
      null,
      'unsupported_media_type',
    );
}

export function httpHandler(state: ServerState, opts: HttpOptions) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = Date.now();
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('client disconnected'));
    });
    let status = 200;
    try {
      const methods = ROUTES[path];
      if (!methods) throw new ApiError(404, `no route ${req.method} ${path}; see GET /v1/models`, 'not_found_error');
      const handler = methods[req.method as 'GET' | 'POST'];
      if (!handler) {
        const allow = Object.keys(methods).join(', ');
        res.setHeader('allow', allow);
        throw new ApiError(405, `${req.method} is not allowed on ${path}; use ${allow}`, 'method_not_allowed');
      }
      checkAuth(req, path, opts.apiKey);
      if (req.method === 'POST') checkJsonBody(req);
      const body = req.method === 'POST' ? parseJson(await readBody(req)) : {};
      const reply = await handler(state, body, abort.signal);
      if (reply.sse) await sendEvents(res, reply.sse, opts.log);
      else send(res, status, reply);
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError(500, `internal error: ${(e as Error).message}`, 'internal_server_error');
      if (!(e instanceof ApiError) && !abort.signal.aborted) opts.log?.(`error in ${req.method} ${path}: ${(e as Error).stack ?? e}`);
      status = err.status;
      send(res, status, { json: err.body() });
    }
    if (opts.logRequests !== false) opts.log?.(`${req.method} ${path} ${status} ${Date.now() - started}ms`);
  };
}
