// A request-hash cache for pipelines (data build, downstream eval): each successful reply is
// stored under DIR/<h[0:2]>/<h>.json, h = sha256 of the canonical JSON (RFC 8785, npm
// `canonicalize`) of what determines the reply: the request body (model, messages, sampling,
// response_format, chat_template_kwargs, extra body; the API key travels in a header and is
// not part of it) plus how the reply is read (kind, schema name and JSON schema). Entries are
// written temp -> fsync -> rename, so a re-run sends no repeated request and a SIGKILL mid-run
// leaves whole entries or none. A hit is recorded with status "cached". Identical requests in
// flight at once share one call.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
// Moves to util/ with the layer change (the atomic-write module every writer shares).
import { writeFileAtomicAsync } from '../util/atomic.ts';
import { endpointUrl, maskUrl } from './client.ts';
import type { Endpoint } from './endpoint.ts';
import { readJson } from './reply.ts';
import type { ChatReply, EmbedReply } from './types.ts';
import { chatBody, embeddingsBody, jsonSchemaOf, responseFormatFor } from './request-body.ts';

export function requestKey(parts: Record<string, unknown>): string {
  return createHash('sha256')
    .update(canonicalize(parts) ?? '')
    .digest('hex');
}

export function withRequestCache(ep: Endpoint, dir: string): Endpoint {
  const o = ep.options;
  const inFlight = new Map<string, Promise<unknown>>();
  const file = (key: string) => join(dir, key.slice(0, 2), `${key}.json`);

  async function cached<R>(route: string, key: string, call: () => Promise<R>, read: (stored: unknown) => R | null): Promise<R> {
    const recordHit = () =>
      ep.sink.record({
        ts: new Date().toISOString(),
        role: o.role,
        endpoint: maskUrl(endpointUrl(o.baseUrl, route)),
        model: o.model,
        status: 'cached',
        latencyMs: 0,
        promptTokens: null,
        completionTokens: null,
        retries: 0,
        error: null,
      });
    const pending = inFlight.get(key);
    if (pending) {
      const shared = (await pending) as R; // sent once by the first caller: a hit for this one
      recordHit();
      return shared;
    }
    const run = (async () => {
      const hit = await readFile(file(key), 'utf8').then(
        (t) => read((JSON.parse(t) as { reply: unknown }).reply),
        () => null,
      );
      if (hit !== null) {
        recordHit();
        return hit;
      }
      const reply = await call();
      await writeFileAtomicAsync(file(key), JSON.stringify({ key, reply }));
      return reply;
    })();
    inFlight.set(key, run);
    try {
      return await run;
    } finally {
      inFlight.delete(key);
    }
  }

  return {
    options: o,
    sink: ep.sink,
    chat: (req) =>
      cached(
        'chat/completions',
        requestKey({ kind: 'chat', body: chatBody(o, req, req.messages) }),
        () => ep.chat(req),
        (s) => (typeof (s as ChatReply)?.text === 'string' ? (s as ChatReply) : null),
      ),
    chatJson: (req, spec) => {
      const key = requestKey({
        kind: 'chat_json',
        body: chatBody(o, req, req.messages, responseFormatFor(o, spec)),
        name: spec.name,
        schema: jsonSchemaOf(spec),
      });
      return cached(
        'chat/completions',
        key,
        () => ep.chatJson(req, spec),
        (s) => {
          const stored = s as ChatReply;
          if (typeof stored?.text !== 'string') return null;
          try {
            // Read again through the schema: the value handed out is always the schema's output.
            return { value: readJson(stored.text, spec.schema, null).value, text: stored.text, usage: stored.usage };
          } catch {
            return null;
          }
        },
      );
    },
    request: (route, send) => ep.request(route, send),
    embed: (texts) =>
      cached(
        'embeddings',
        requestKey({ kind: 'embed', body: embeddingsBody(o, texts) }),
        () => ep.embed(texts),
        (s) => (Array.isArray((s as EmbedReply)?.vectors) && (s as EmbedReply).vectors.length === texts.length ? (s as EmbedReply) : null),
      ),
  };
}
