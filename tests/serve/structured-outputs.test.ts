// gsteer serve with vLLM's structured_outputs over real tiny Qwen3 checkpoints:
//   - masked logprobs (and top_logprobs) equal a brute-force reference: log-softmax of the
//     model's logits over the ids whose text keeps the turn inside the grammar, decided by
//     parseTurn through turn-prefix.ts (no xgrammar), within 1e-5;
//   - the same greedy request with and without a grammar: same ids, logprobs equal where
//     the mask keeps every id and higher by exactly log(Z_all / Z_allowed) where it does not;
//   - same seed, same completion alone and three at a time, with and without a grammar;
//   - a grammar that does not compile is a 400 (the server keeps serving); a dead end
//     finishes the choice with finish_reason "abort", stop_reason "grammar_dead_end";
//   - with the policy filter every turn parses and ends with EOS within max_tokens, and the
//     trainer's replay of the ids gives back the server's logprobs (the same masks).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { parseTurn } from '../../structured/turn/grammar.ts';
import { startServer, type RunningServer } from '../../serve/server.ts';
import { compileConstraint } from '../../structured/compile.ts';
import { allowedIds } from '../../structured/constraint.ts';
import { ebnfString } from '../../structured/regex-ebnf.ts';
import { replayConstraint } from '../../structured/replay.ts';
import { qwen3Vocab, type TokenVocab } from '../../structured/vocab.ts';
import { createKvCache, forwardStep, loadModel, type Qwen3Model } from '../../model/index.ts';
import { encodeChat, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { makeTinyModel, tinyKeptIds } from './tiny-model.ts';
import { grammarText, validIgnoringNames, viablePrefix } from '../structured/turn-prefix.ts';

const tok = qwen3Tokenizer();
const prompt = encodeChat(tok, [{ role: 'user', content: 'Plan a trip to Kyoto.' }]);

interface Choice {
  text: string;
  finish_reason: string;
  stop_reason: string | null;
  token_ids: number[];
  logprobs: { token_logprobs: number[]; top_logprobs: Record<string, number>[] | null } | null;
}
interface Completion {
  choices: Choice[];
  gsteer_structured_outputs?: Record<string, unknown>;
}

class Tiny {
  server!: RunningServer;
  model!: Qwen3Model;
  vocab!: TokenVocab;
  private files!: ReturnType<typeof makeTinyModel>;
  constructor(private readonly keptIds: number[] = tinyKeptIds()) {}

  async start(): Promise<void> {
    this.files = makeTinyModel(7, this.keptIds);
    this.server = await startServer({ modelDir: this.files.dir, servedModelName: 'tiny', backend: 'wasm', maxConcurrency: 3 });
    this.model = await loadModel(this.files.dir);
    this.vocab = qwen3Vocab(this.model.vocab?.keptIds ?? null, this.model.config.vocabSize);
  }

  /** The stop tokens' ids (the vocabulary lists their indices: a trimmed model's rows). */
  get stopTokenIds(): number[] {
    return this.vocab.stopIds.map((i) => (this.vocab.ids ? (this.vocab.ids[i] as number) : i));
  }

  /** Token `id`'s bytes. */
  tokenBytes(id: number): Uint8Array {
    return this.vocab.bytes(this.vocab.indexOf(id));
  }

  async stop(): Promise<void> {
    await this.server?.close();
    this.model?.dispose();
    this.files?.cleanup();
  }

  async post(
    body: Record<string, unknown>,
    path = '/v1/completions',
  ): Promise<{ status: number; json: Completion & { error?: { message: string; param: string } } }> {
    const res = await fetch(`${this.server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', ...body }),
    });
    return { status: res.status, json: (await res.json()) as Completion & { error?: { message: string; param: string } } };
  }

  async complete(body: Record<string, unknown>): Promise<Choice> {
    const r = await this.post({ prompt, return_token_ids: true, return_tokens_as_token_ids: true, ...body });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    return r.json.choices[0] as Choice;
  }

  /** The model's logits [V] before each completion position (the trainer's own forward pass). */
  logitsAlong(ids: number[], promptIds: number[] = prompt): Float32Array[] {
    const cache = createKvCache(this.model);
    try {
      const out = [forwardStep(this.model, null, cache, promptIds)];
      for (const id of ids.slice(0, -1)) out.push(forwardStep(this.model, null, cache, [id]));
      return out;
    } finally {
      cache.dispose();
    }
  }
}

/** log Z over `ids`, in float64. */
function logZ(logits: Float32Array, ids: Iterable<number>): number {
  let max = -Infinity;
  for (const i of ids) max = Math.max(max, logits[i] as number);
  let s = 0;
  for (const i of ids) s += Math.exp((logits[i] as number) - max);
  return max + Math.log(s);
}

const tokenId = (name: string) => Number(name.replace('token_id:', ''));

describe('structured outputs: the policy grammar on the tiny model', () => {
  const tiny = new Tiny();
  beforeAll(() => tiny.start(), 120_000);
  afterAll(() => tiny.stop());

  it('masked logprobs and top_logprobs equal the brute-force reference (parseTurn-level acceptance) within 1e-5', async () => {
    const kept = tiny.vocab.ids as Int32Array;
    for (const seed of [1, 2]) {
      const c = await tiny.complete({ max_tokens: 40, temperature: 1, seed, logprobs: 5, structured_outputs: { grammar: POLICY_GRAMMAR } });
      const ids = c.token_ids;
      const logits = tiny.logitsAlong(ids);
      const bytes: number[] = [];
      let restricted = 0;
      ids.forEach((id, t) => {
        // Reference: the kept ids whose bytes keep the text a viable turn prefix; EOS when the text is a whole turn.
        const allowed: number[] = [];
        for (const cand of kept) {
          if (tiny.stopTokenIds.includes(cand)) {
            const text = grammarText(Uint8Array.from(bytes));
            if (text !== null && validIgnoringNames(text)) allowed.push(cand);
            continue;
          }
          const text = grammarText(Uint8Array.from([...bytes, ...tiny.tokenBytes(cand)]));
          if (text !== null && viablePrefix(text)) allowed.push(cand);
        }
        expect(allowed).toContain(id);
        const lz = logZ(logits[t] as Float32Array, allowed);
        const ref = (logits[t]![id] as number) - lz;
        expect(Math.abs((c.logprobs!.token_logprobs[t] as number) - ref), `position ${t}`).toBeLessThan(1e-5);
        // top_logprobs: the 5 most likely allowed ids, with their masked logprobs (+ the sampled one)
        const top = Object.entries(c.logprobs!.top_logprobs![t] as Record<string, number>);
        const refTop = [...allowed].sort((a, b) => (logits[t]![b] as number) - (logits[t]![a] as number)).slice(0, 5);
        for (const rid of refTop) {
          const got = top.find(([n]) => tokenId(n) === rid);
          expect(got, `position ${t}: id ${rid} in top_logprobs`).toBeDefined();
          expect(Math.abs((got![1] as number) - ((logits[t]![rid] as number) - lz))).toBeLessThan(1e-5);
        }
        if (allowed.length < kept.length) restricted++;
        bytes.push(...tiny.tokenBytes(id));
      });
      expect(restricted).toBeGreaterThan(0);
    }
  }, 180_000);

  it('same seed, same completion (ids and logprobs) alone and three at a time, with and without a grammar', async () => {
    const bodies = [
      { max_tokens: 24, temperature: 0.9, top_p: 0.9, seed: 5, logprobs: 1 },
      {
        max_tokens: 60,
        temperature: 0.9,
        top_p: 0.9,
        seed: 5,
        logprobs: 1,
        structured_outputs: { grammar: POLICY_GRAMMAR },
        gsteer_token_filter: 'policy_turn',
      },
      { max_tokens: 24, temperature: 1, seed: 9, logprobs: 1, structured_outputs: { regex: '[a-z ]{3,12}\\.' } },
    ];
    for (const body of bodies) {
      const alone = await tiny.complete(body);
      const together = await Promise.all([tiny.complete(body), tiny.complete({ ...body, seed: 77 }), tiny.complete(body)]);
      for (const c of [together[0], together[2]]) {
        expect(c!.token_ids).toEqual(alone.token_ids);
        expect(c!.logprobs!.token_logprobs).toEqual(alone.logprobs!.token_logprobs);
      }
    }
  }, 120_000);

  it('with the policy filter: turns parse, end with EOS within max_tokens, and the replay gives the same logprobs', async () => {
    const compiled = await compileConstraint({ type: 'grammar', grammar: POLICY_GRAMMAR, filter: 'policy_turn' }, tiny.vocab);
    for (const [seed, maxTokens] of [
      [1, 60],
      [2, 120],
      [3, 40],
    ] as const) {
      const r = await tiny.post({
        prompt,
        max_tokens: maxTokens,
        temperature: 1,
        seed,
        logprobs: 1,
        return_token_ids: true,
        structured_outputs: { grammar: POLICY_GRAMMAR },
        gsteer_token_filter: 'policy_turn',
      });
      const c = r.json.choices[0] as Choice;
      expect(r.json.gsteer_structured_outputs).toMatchObject({
        type: 'grammar',
        token_filter: 'policy_turn',
        token_filter_version: 1,
        max_tokens: maxTokens,
        vocab: tiny.vocab.key,
      });
      expect(c.finish_reason).toBe('stop');
      expect(tiny.stopTokenIds).toContain(c.token_ids.at(-1));
      expect(c.token_ids.length).toBeLessThanOrEqual(maxTokens);
      expect(parseTurn(c.text)).toMatchObject({ ok: true });
      const replay = await replayConstraint(compiled, { maxTokens }, c.token_ids);
      expect(replay.accepted).toBe(true);
      const logits = tiny.logitsAlong(c.token_ids);
      c.token_ids.forEach((id, t) => {
        const allowed = allowedIds(replay.masks[replay.maskIndex[t] as number] as Int32Array, tiny.vocab.ids, tiny.vocab.size);
        expect(Math.abs((logits[t]![id] as number) - logZ(logits[t] as Float32Array, allowed) - (c.logprobs!.token_logprobs[t] as number))).toBeLessThan(1e-5);
      });
    }
  }, 120_000);

  it('refuses what does not compile with a 400 naming the field, and keeps serving', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ structured_outputs: { grammar: 'root ::= "a" b' } }, 'structured_outputs.grammar', /xgrammar.*Rule "b" is not defined/],
      [{ structured_outputs: { grammar: 'root ::= ("a"' } }, 'structured_outputs.grammar', /xgrammar/],
      [{ structured_outputs: { grammar: 'start: "a"' } }, 'structured_outputs.grammar', /Lark/],
      [{ structured_outputs: { regex: '(a)\\1' } }, 'structured_outputs.regex', /backreference/],
      [{ structured_outputs: { json: '{"type": ' } }, 'structured_outputs.json', /xgrammar/],
      [{ structured_outputs: { regex: 'a', choice: ['a'] } }, 'structured_outputs', /exactly one of/],
      [{ guided_grammar: 'root ::= "a"' }, 'guided_grammar', /removed in vLLM 0\.12.*structured_outputs/],
      [{ structured_outputs: { grammar: 'root ::= "a"' }, gsteer_token_filter: 'policy_turn' }, 'gsteer_token_filter', /policy grammar only/],
      [{ structured_outputs: { grammar: POLICY_GRAMMAR }, gsteer_token_filter: 'policy_turn', max_tokens: 20 }, 'max_tokens', />= 35/],
      [{ structured_outputs: { choice: ['a'] }, ignore_eos: true }, 'ignore_eos', /ignore_eos/],
    ];
    for (const [body, param, message] of cases) {
      const r = await tiny.post({ prompt, max_tokens: 8, ...body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error).toMatchObject({ param });
      expect(r.json.error!.message).toMatch(message);
    }
    const ok = await tiny.complete({ max_tokens: 8, temperature: 0, structured_outputs: { choice: ['yes', 'no'] } });
    expect(['yes', 'no']).toContain(ok.text);
  });

  it('serves choice, regex, json and json_object on both endpoints', async () => {
    const regex = await tiny.complete({ max_tokens: 16, seed: 3, structured_outputs: { regex: '[a-c]{2}-[0-9]{1,2}' } });
    expect(regex.text).toMatch(/^[a-c]{2}-[0-9]{1,2}$/);
    const schema = { type: 'object', properties: { pick: { enum: ['left', 'right'] } }, required: ['pick'], additionalProperties: false };
    const json = await tiny.complete({ max_tokens: 30, seed: 4, structured_outputs: { json: schema, disable_any_whitespace: true } });
    expect(['left', 'right']).toContain(JSON.parse(json.text).pick);
    const chat = await tiny.post(
      { messages: [{ role: 'user', content: 'yes or no?' }], max_tokens: 8, seed: 1, structured_outputs: { choice: ['yes', 'no'] } },
      '/v1/chat/completions',
    );
    expect(['yes', 'no']).toContain((chat.json.choices[0] as unknown as { message: { content: string } }).message.content);
    const rf = await tiny.post(
      { messages: [{ role: 'user', content: 'json' }], max_tokens: 40, seed: 2, response_format: { type: 'json_schema', json_schema: { name: 'p', schema } } },
      '/v1/chat/completions',
    );
    expect(['left', 'right']).toContain(JSON.parse((rf.json.choices[0] as unknown as { message: { content: string } }).message.content).pick);
  }, 60_000);
});

describe('the same greedy request with and without a grammar', () => {
  // Kept ids without the bytes no grammar can start a character with (0x00, 0x80-0xFF), so
  // a free-text grammar keeps every id: positions there must report the raw logprobs.
  const ascii = Array.from({ length: 127 }, (_, i) => i + 1)
    .map((b) => tok.encode(String.fromCharCode(b)))
    .filter((e) => e.length === 1)
    .map((e) => e[0] as number);
  const tiny = new Tiny([...new Set([...tinyKeptIds().filter((id) => id >= 256), ...ascii])]);
  beforeAll(() => tiny.start(), 120_000);
  afterAll(() => tiny.stop());

  it('reports the same ids, and different logprobs exactly where the mask removes mass', async () => {
    const raw = tok.encode('The quick brown fox'); // a prompt this model does not end at once
    const free = await tiny.complete({ prompt: raw, max_tokens: 12, temperature: 0, logprobs: 1 });
    expect(free.token_ids.slice(0, 5).some((id) => tiny.stopTokenIds.includes(id))).toBe(false);
    const literal = tok.decode(free.token_ids.slice(0, 5));
    // The literal's characters, then anything: the greedy path stays the same.
    const grammar = `root ::= ${ebnfString(literal)} [^\\x00]*`;
    const masked = await tiny.complete({ prompt: raw, max_tokens: 12, temperature: 0, logprobs: 1, structured_outputs: { grammar } });
    expect(masked.token_ids).toEqual(free.token_ids);
    const compiled = await compileConstraint({ type: 'grammar', grammar }, tiny.vocab);
    const replay = await replayConstraint(compiled, { maxTokens: 12 }, masked.token_ids);
    const logits = tiny.logitsAlong(masked.token_ids, raw);
    let equal = 0;
    let higher = 0;
    masked.token_ids.forEach((id, t) => {
      const allowed = allowedIds(replay.masks[replay.maskIndex[t] as number] as Int32Array, tiny.vocab.ids, tiny.vocab.size);
      const raw = free.logprobs!.token_logprobs[t] as number;
      const got = masked.logprobs!.token_logprobs[t] as number;
      if (allowed.length === (tiny.vocab.ids as Int32Array).length) {
        expect(got).toBe(raw);
        equal++;
      } else {
        const removed = logZ(logits[t] as Float32Array, tiny.vocab.ids as Int32Array) - logZ(logits[t] as Float32Array, allowed); // log(Z_all / Z_allowed) > 0
        expect(removed).toBeGreaterThan(1e-6);
        expect(Math.abs(got - raw - removed)).toBeLessThan(1e-5);
        higher++;
      }
    });
    expect(equal).toBeGreaterThan(0);
    expect(higher).toBeGreaterThan(0);
  }, 60_000);
});

describe('/metrics of constrained decoding', () => {
  const tiny = new Tiny();
  beforeAll(() => tiny.start(), 120_000);
  afterAll(() => tiny.stop());

  it('counts the tokens sampled under a grammar and their constraint time; unconstrained ones add nothing', async () => {
    const read = async () => {
      const text = await (await fetch(`${tiny.server.url}/metrics`)).text();
      const get = (name: string) => Number(new RegExp(`^gsteer_serve:${name} (\\S+)$`, 'm').exec(text)?.[1]);
      return {
        tokens: get('structured_output_tokens_total'),
        seconds: get('structured_output_seconds_total'),
        generated: get('generation_tokens_total'),
        forward: get('forward_seconds_total'),
      };
    };
    const m0 = await read();
    const free = await tiny.complete({ max_tokens: 9, temperature: 1, seed: 3 });
    const m1 = await read();
    expect(m1.generated - m0.generated).toBe(free.token_ids.length);
    expect(m1.tokens - m0.tokens).toBe(0);
    expect(m1.seconds - m0.seconds).toBe(0);
    expect(m1.forward - m0.forward).toBeGreaterThan(0);
    const masked = await tiny.complete({ max_tokens: 40, temperature: 1, seed: 3, structured_outputs: { grammar: POLICY_GRAMMAR } });
    const m2 = await read();
    expect(masked.token_ids.length).toBeGreaterThan(1);
    expect(m2.tokens - m1.tokens).toBe(masked.token_ids.length);
    expect(m2.seconds - m1.seconds).toBeGreaterThan(0);
  }, 60_000);
});

describe('a grammar the vocabulary cannot spell', () => {
  // No byte tokens: "q" cannot be written.
  const tiny = new Tiny([...tok.encode('yes no'), ...tok.encode('Plan a trip to Kyoto.'), 151643, 151644, 151645]);
  beforeAll(() => tiny.start(), 120_000);
  afterAll(() => tiny.stop());

  it('finishes the choice with finish_reason "abort" and stop_reason "grammar_dead_end" (also streamed)', async () => {
    const c = await tiny.complete({ max_tokens: 8, structured_outputs: { grammar: 'root ::= "yes qq"' }, logprobs: 1 });
    expect(c).toMatchObject({ finish_reason: 'abort', stop_reason: 'grammar_dead_end' });
    expect(tok.decode(c.token_ids)).toBe('yes');
    const res = await fetch(`${tiny.server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', prompt, max_tokens: 8, stream: true, structured_outputs: { grammar: 'root ::= "qq"' } }),
    });
    const events = (await res.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)));
    expect(events.at(-1).choices[0]).toMatchObject({ finish_reason: 'abort', stop_reason: 'grammar_dead_end', text: '' });
  });
});
