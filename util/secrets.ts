// The one masking rule for secrets, applied to every output gsteer makes (run files, the
// dashboard, `config show`, logs, error messages). A secret is:
//   - the credentials of a URL (user:password@),
//   - a query parameter whose name says key, token, secret, password, signature or auth,
//   - the value of a header whose name says so (Authorization, X-API-Key, Cookie ...),
//   - a config field whose name says so (a field naming an environment variable, `...Env`,
//     or a header, `...Header`, holds no secret and is kept),
//   - any value registered here: the keys read from environment variables (apiKeyEnv fields,
//     the serve and dashboard keys) and values of ${VAR} references in secret positions.
// Each becomes "***". The rule is pure text work: no I/O, cheap when nothing matches.

const SECRET_NAME = /key|token|secret|passw|pwd|signature|^sig$|auth|credential|cookie|session/i;
/** Fields that hold the *name* of a secret's variable or header, or its prefix: kept. */
const NOT_SECRET_FIELD = /(Env|Header|Prefix|Tokens|TokenIds|Ids)$|^(maxTokens|topK|keep|keepAlive)$/;

export const MASK = '***';

/** A query parameter or header named like a secret. */
export const isSecretName = (name: string) => SECRET_NAME.test(name);
/** A config field holding a secret (not `apiKeyEnv`, `apiKeyHeader`, `maxTokens` ...). */
export const isSecretField = (name: string) => SECRET_NAME.test(name) && !NOT_SECRET_FIELD.test(name);

const registered = new Set<string>();

/** Mask `value` wherever it appears from now on (values under 6 characters are too common to mask blindly). */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= 6 && value !== MASK) registered.add(value);
}

/** Register the values of the environment variables named (apiKeyEnv fields and the like). */
export function registerEnvSecrets(names: Iterable<string | undefined>, env: NodeJS.ProcessEnv = process.env): void {
  for (const n of names) if (n) registerSecret(env[n]);
}

/** `${VAR}` (optionally after a scheme word, "Bearer ${VAR}"): names a secret, holds none. */
export const isReference = (v: string) => /^(?:[A-Za-z]+ )?\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(v);
const decoded = (v: string) => {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
};

/** A URL fit for output: credentials and secret-named query values become *** (`${VAR}` references stay). */
export function maskUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url.replace(/\/\/[^/@\s]*@/, `//${MASK}@`);
  }
  const secretParams = [...u.searchParams.entries()].filter(([k, v]) => isSecretName(k) && !isReference(v)).map(([k]) => k);
  const creds = [u.username, u.password].some((c) => c && !isReference(decoded(c)));
  if (!creds && !secretParams.length) return maskKnown(url); // nothing to mask: the text as written
  if (creds) {
    u.username = MASK;
    u.password = '';
  }
  for (const k of secretParams) u.searchParams.set(k, MASK);
  return maskKnown(u.toString().replace(/%2A/g, '*'));
}

/** Headers fit for output: secret-named ones' values become ***. */
export function maskHeaders(h: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, isSecretName(k) ? MASK : typeof v === 'string' ? maskText(v) : v]));
}

function maskKnown(text: string): string {
  let out = text;
  for (const s of registered) if (out.includes(s)) out = out.split(s).join(MASK);
  return out;
}

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s'"<>`\\]+/gi;

/**
 * Any text, JSON included (run files, dashboard answers, command output): registered values
 * and URLs' credentials and secret query values become ***, inside strings only, so JSON
 * stays JSON.
 */
export function maskValues(text: string): string {
  const out = maskKnown(text);
  return out.includes('://') ? out.replace(URL_IN_TEXT, (u) => maskUrl(u)) : out;
}

/**
 * Free text (a log line, an error message) fit for output: maskValues, and also
 * `Bearer <token>` and `name: value` / `name=value` pairs whose name says secret. Not for
 * JSON (an unquoted number after a secret-looking name would lose its quotes' worth).
 */
export function maskText(text: string): string {
  return maskValues(text)
    .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{6,}/g, `$1 ${MASK}`)
    .replace(
      /(["']?)([A-Za-z0-9_-]*(?:api[_-]?key|token|secret|password|passwd)[A-Za-z0-9_-]*)\1(\s*[:=]\s*)(["']?)([^\s"'&,;}]{6,})\4/gi,
      (m, q1: string, name: string, sep: string, q2: string, value: string) =>
        value === MASK || /Env$|Header$|Prefix$|tokens$|^max|_ids?$/i.test(name) ? m : `${q1}${name}${q1}${sep}${q2}${MASK}${q2}`,
    );
}

/**
 * A config tree fit for output (`config show`, RUN/config.yaml as served): secret fields,
 * headers maps, URLs and registered values masked; everything else as it is. `${VAR}`
 * references are kept (they name a variable, they do not hold its value).
 */
export function maskConfig<T>(tree: T): T {
  const walk = (v: unknown, key: string): unknown => {
    if (typeof v === 'string') {
      if (isReference(v)) return v;
      if (isSecretField(key)) return MASK;
      return maskValues(v);
    }
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (v && typeof v === 'object') {
      const isHeaders = /headers$/i.test(key);
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).map(([k, x]) => [
          k,
          isHeaders && typeof x === 'string' && isSecretName(k) && !isReference(x) ? MASK : walk(x, k),
        ]),
      );
    }
    return v;
  };
  return walk(tree, '') as T;
}

/** Paths of the config leaves the rule masks (a literal secret): `queues.redisUrl`, `qref.search.http.headers.Authorization`. */
export function secretPaths(tree: unknown): string[] {
  const masked = maskConfig(tree);
  const out: string[] = [];
  const diff = (a: unknown, b: unknown, path: string[]) => {
    if (typeof a === 'string') {
      if (a !== b) out.push(path.join('.'));
      return;
    }
    if (a && typeof a === 'object') for (const [k, v] of Object.entries(a)) diff(v, (b as Record<string, unknown>)[k], [...path, k]);
  };
  diff(tree, masked, []);
  return out;
}
