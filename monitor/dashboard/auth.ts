// Who may talk to the dashboard. On a loopback address with no token: only requests whose
// Host header names a loopback host (a web page elsewhere cannot reach it through DNS
// rebinding). With a token (--token or GSTEER_MONITOR_TOKEN; required for any other
// address): every request shows it, as `Authorization: Bearer <token>` (scrapers, curl), or
// once as `?token=<token>`, which sets an HttpOnly session cookie and redirects to the same
// URL without it (browsers; EventSource cannot send headers). Comparisons run in constant
// time; the token is never logged, echoed or put in the cookie.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { InputError } from '../../util/errors.ts';

export const TOKEN_ENV = 'GSTEER_MONITOR_TOKEN';
export const MIN_TOKEN_LENGTH = 16;
const COOKIE = 'gsteer_session';
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export const isLoopback = (host: string) => LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);

/** The bind rule, checked before anything listens. */
export function checkBind(host: string, token: string | null): void {
  if (token !== null && token.length < MIN_TOKEN_LENGTH)
    throw new InputError(`the dashboard token is ${token.length} characters; it must have at least ${MIN_TOKEN_LENGTH} (make one with: openssl rand -hex 32)`);
  if (!isLoopback(host) && token === null)
    throw new InputError(
      `--host ${host} would serve the dashboard beyond this machine without a token; the rule: any host other than 127.0.0.1/localhost needs --token T or ${TOKEN_ENV}=T (make one with: openssl rand -hex 32), or keep the default --host 127.0.0.1 and use an SSH tunnel`,
    );
}

// SHA-256 first so both sides have the same length, as timingSafeEqual needs.
const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
const equal = (a: Buffer, b: string) => timingSafeEqual(a, digest(b));

function cookieValue(req: Request): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === COOKIE) return v.join('=');
  }
  return null;
}

/** Hostname of a Host header (`127.0.0.1:6007` -> `127.0.0.1`, `[::1]:6007` -> `[::1]`). */
const hostOf = (h: string) => (h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : (h.split(':')[0] ?? ''));

export function authMiddleware(token: string | null) {
  if (token === null) {
    return (req: Request, res: Response, next: NextFunction) => {
      if (isLoopback(hostOf(req.headers.host ?? ''))) return next();
      res.status(403).type('text/plain').send('403: this dashboard answers only to a loopback Host (127.0.0.1 or localhost)\n');
    };
  }
  const want = digest(token);
  const session = randomBytes(32).toString('hex'); // per process: a restart asks for the token again
  const sessionDigest = digest(session);
  return (req: Request, res: Response, next: NextFunction) => {
    const auth = req.headers.authorization ?? '';
    if (auth.startsWith('Bearer ') && equal(want, auth.slice(7))) return next();
    const cookie = cookieValue(req);
    if (cookie !== null && equal(sessionDigest, cookie)) return next();
    const url = new URL(req.originalUrl, 'http://dashboard');
    const given = url.searchParams.get('token');
    if (given !== null && equal(want, given)) {
      url.searchParams.delete('token');
      res.setHeader('Set-Cookie', `${COOKIE}=${session}; HttpOnly; SameSite=Strict; Path=/`);
      return res.redirect(303, `${url.pathname}${url.search}`);
    }
    res.status(401).setHeader('WWW-Authenticate', 'Bearer realm="gsteer dashboard"');
    res.type('text/plain').send('401: this dashboard needs its token: open the URL once with ?token=<token>, or send Authorization: Bearer <token>\n');
  };
}
