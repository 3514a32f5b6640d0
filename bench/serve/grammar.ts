// Decode throughput of `gsteer serve` with and without structured outputs (not part of npm
// test), and where the grammar's time goes. Usage:
//   node --import tsx bench/serve/grammar.ts [--model models/tiny-demo] [--backend auto|wasm|cpu]
//        [--requests 8] [--max-tokens 128] [--concurrency 1,4]
// Prompts are real policy prompts (`gsteer sft build` on the demo data, run here into a temp
// dir). The server runs in-process over real HTTP; requests stream, and decode time is first
// token -> last token of each request, so prefill is left out. Each mode sends the same
// requests (same seeds): the grammar + gsteer's policy filter, the policy grammar alone
// (structured/turn/grammar.ebnf), and unconstrained with each request's length matched to its
// grammar+filter run (`level`). Ratios are against the unconstrained run at the same
// concurrency, measured in the same run. The second table replays the constrained
// completions through a TokenConstraint to time its parts per token, on the model's
// vocabulary and on the full Qwen3 vocabulary (what a real checkpoint pays).
import { parseArgs } from 'node:util';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { startServer } from '../../serve/server.ts';
import { compileConstraint } from '../../structured/compile.ts';
import { qwen3Vocab, type TokenVocab } from '../../structured/vocab.ts';
import { readVocabMap } from '../../model/index.ts';
import { encodeChat, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { idSpaceVocab, replayParts, sftExamples, type Parts } from './replay-parts.ts';

const MODES = {
  none: {},
  grammar: { structured_outputs: { grammar: POLICY_GRAMMAR } },
  'grammar+filter': { structured_outputs: { grammar: POLICY_GRAMMAR }, gsteer_token_filter: 'policy_turn' },
} as const;
type Mode = keyof typeof MODES;

interface Sample {
  ids: number[];
  decodeMs: number; // first token -> last token
}

/** The server's constraint clock: tokens sampled under a grammar and the seconds of their constraint work. */
async function constraintClock(url: string): Promise<{ tokens: number; seconds: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const metric = (name: string) => Number(new RegExp(`^gsteer_serve:${name} (\\S+)$`, 'm').exec(text)?.[1]);
  return { tokens: metric('structured_output_tokens_total'), seconds: metric('structured_output_seconds_total') };
}

async function stream(url: string, body: Record<string, unknown>): Promise<Sample> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true, return_token_ids: true }),
  });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const ids: number[] = [];
  let first = NaN;
  let last = NaN;
  let buffered = '';
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    buffered += decoder.decode(bytes as Uint8Array, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end).replace(/^data: /, '');
      buffered = buffered.slice(end + 2);
      if (event === '[DONE]') continue;
      const got = (JSON.parse(event) as { choices?: { token_ids?: number[] }[] }).choices?.[0]?.token_ids ?? [];
      if (!got.length) continue;
      ids.push(...got);
      last = performance.now();
      if (Number.isNaN(first)) first = last;
    }
  }
  return { ids, decodeMs: last - first };
}

interface Row {
  mode: Mode;
  concurrency: number;
  samples: Sample[];
  tokPerS: number;
  msPerToken: number;
}

/**
 * `requests` requests per mode, `concurrency` at a time; the modes take turns batch by
 * batch, so a load change on the (shared) machine hits them alike. grammar+filter runs
 * first, and the unconstrained run of each request then decodes exactly as many tokens
 * (max_tokens = that length, ignore_eos): the same batch sizes over time and the same
 * contexts, so the two differ only by the constraint (the grammar alone ends where it
 * ends, so its row is not length-matched).
 */
async function level(url: string, model: string, prompts: number[][], requests: number, concurrency: number, maxTokens: number): Promise<Row[]> {
  const order: Mode[] = ['grammar+filter', 'grammar', 'none'];
  const samples = new Map<Mode, Sample[]>(order.map((m) => [m, []]));
  for (let start = 0; start < requests; start += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, requests - start) }, (_, k) => start + k);
    const lengths = new Map<number, number>();
    for (const mode of order) {
      const length = (i: number) => (mode === 'none' ? { max_tokens: lengths.get(i) as number, ignore_eos: true } : { max_tokens: maxTokens });
      const body = (i: number) => ({ model, prompt: prompts[i % prompts.length], temperature: 1, seed: i, ...length(i), ...MODES[mode] });
      const got = await Promise.all(batch.map((i) => stream(url, body(i))));
      if (mode === 'grammar+filter') batch.forEach((i, k) => lengths.set(i, got[k]!.ids.length));
      (samples.get(mode) as Sample[]).push(...got);
    }
  }
  return [...samples].map(([mode, ss]) => {
    const decodeTokens = ss.reduce((s, x) => s + x.ids.length - 1, 0);
    const decodeMs = ss.reduce((s, x) => s + x.decodeMs, 0);
    // tokens/s of one sequence while decoding, times the sequences in flight
    return { mode, concurrency, samples: ss, tokPerS: (decodeTokens / decodeMs) * 1000 * concurrency, msPerToken: decodeMs / decodeTokens };
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string', default: 'models/tiny-demo' },
      backend: { type: 'string', default: 'auto' },
      requests: { type: 'string', default: '8' },
      'max-tokens': { type: 'string', default: '128' },
      concurrency: { type: 'string', default: '1,4' },
    },
  });
  const modelDir = values.model as string;
  const requests = Number(values.requests);
  const maxTokens = Number(values['max-tokens']);
  const levels = (values.concurrency as string).split(',').map(Number);
  const tok = qwen3Tokenizer();
  const prompts = sftExamples(requests).map((e) => encodeChat(tok, e.input));
  const server = await startServer({ modelDir, servedModelName: 'bench', backend: values.backend as 'auto', maxConcurrency: Math.max(...levels) });
  const rows: Row[] = [];
  const inServer = new Map<number, number>(); // concurrency -> ms of constraint work per constrained token
  try {
    await stream(server.url, { model: 'bench', prompt: prompts[0], max_tokens: 40, ...MODES['grammar+filter'] }); // warm-up, first compile
    for (const c of levels) {
      const before = await constraintClock(server.url);
      rows.push(...(await level(server.url, 'bench', prompts, requests, c, maxTokens)));
      const after = await constraintClock(server.url);
      inServer.set(c, ((after.seconds - before.seconds) * 1000) / (after.tokens - before.tokens));
    }
  } finally {
    await server.close();
  }
  const avgPrompt = Math.round(prompts.reduce((s, p) => s + p.length, 0) / prompts.length);
  console.log(
    `\ngsteer serve on ${modelDir} (backend ${values.backend}); ${requests} requests per row, max_tokens ${maxTokens}, temperature 1, prompts ~${avgPrompt} tokens (demo SFT inputs)\n`,
  );
  console.log('| concurrency | mode | decode tokens/s | vs none | ms/token per sequence | tokens decoded | ended with EOS |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of [...rows].sort((a, b) => a.concurrency - b.concurrency || Number(b.mode === 'none') - Number(a.mode === 'none'))) {
    const base = rows.find((b) => b.concurrency === r.concurrency && b.mode === 'none') as Row;
    const n = r.samples.reduce((s, x) => s + x.ids.length, 0);
    const eos = r.samples.filter((x) => [151643, 151645].includes(x.ids[x.ids.length - 1] as number)).length;
    console.log(
      `| ${r.concurrency} | ${r.mode} | ${r.tokPerS.toFixed(1)} | ${(r.tokPerS / base.tokPerS).toFixed(2)}x | ${r.msPerToken.toFixed(2)} | ${n} | ${eos}/${r.samples.length} |`,
    );
  }
  const step1 = (rows.find((r) => r.mode === 'none' && r.concurrency === 1) ?? rows[0])!.msPerToken;
  console.log(
    "\nIn the server (GET /metrics: gsteer_serve:structured_output_seconds_total / _tokens_total over each concurrency's grammar and grammar+filter requests): constraint work per constrained token, against the unconstrained ms/token per sequence above; the replay below times the same work in a tight loop, with warm caches. At concurrency c a step decodes c sequences and computes their masks one after another on the same thread, and their calls interleave (awaited together: each one's time holds some of the others'), so a step pays about c times the concurrency-1 figure.\n",
  );
  console.log('| concurrency | constraint ms per token | unconstrained ms/token | share of the decode step |');
  console.log('|---|---|---|---|');
  for (const [c, ms] of inServer) {
    const base = rows.find((r) => r.mode === 'none' && r.concurrency === c)!.msPerToken;
    console.log(`| ${c} | ${ms.toFixed(3)} | ${base.toFixed(2)} | ${((100 * ms) / base).toFixed(1)}% |`);
  }
  const completions = rows.filter((r) => r.mode === 'grammar+filter').flatMap((r) => r.samples.map((s) => s.ids));
  const kept = readVocabMap(modelDir, 151936)?.keptIds ?? null;
  const step = step1;
  console.log(
    `\nPer token, replaying the ${completions.length} grammar+filter completions (model decode step, unconstrained, concurrency 1: ${step.toFixed(2)} ms);`,
  );
  console.log(
    "filter: id by id (applyPerId, before issue 22) or on bitmask words (apply); a trimmed model's constraint over the whole id space (before issue 22) or over its rows (compact, after); same masks:\n",
  );
  console.log(
    '| vocabulary | filter | compile ms | xgrammar mask ms | filter ms | allowed ids ms | accept ms | total ms | share of the decode step | filter words/per id |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  const vocabs: [string, TokenVocab][] = [
    ...(kept
      ? ([
          [`model (${kept.length} ids), whole id space`, idSpaceVocab(kept)],
          [`model (${kept.length} ids), compact rows`, qwen3Vocab(kept)],
        ] as [string, TokenVocab][])
      : []),
    ['full Qwen3 (151,936 ids)', qwen3Vocab()],
  ];
  for (const [label, vocab] of vocabs) {
    const compiled = await compileConstraint({ type: 'grammar', grammar: POLICY_GRAMMAR, filter: 'policy_turn' }, vocab);
    // alternate the two, twice, so a load change on the shared machine hits both alike
    const runs = { applyPerId: [] as Parts[], apply: [] as Parts[] };
    for (let r = 0; r < 2; r++) for (const f of ['applyPerId', 'apply'] as const) runs[f].push(await replayParts(compiled, vocab, completions, maxTokens, f));
    const sum = (ps: Parts[]): Parts =>
      ps.reduce((a, p) => ({
        maskMs: a.maskMs + p.maskMs,
        filterMs: a.filterMs + p.filterMs,
        allowedMs: a.allowedMs + p.allowedMs,
        acceptMs: a.acceptMs + p.acceptMs,
        tokens: a.tokens + p.tokens,
      }));
    const before = sum(runs.applyPerId);
    for (const [name, p] of [
      ['before', before],
      ['after', sum(runs.apply)],
    ] as const) {
      const per = (ms: number) => ms / p.tokens;
      const total = per(p.maskMs + p.filterMs + p.allowedMs + p.acceptMs);
      const ratio = name === 'after' ? `${(p.filterMs / before.filterMs).toFixed(2)}x` : '';
      console.log(
        `| ${label} | ${name === 'before' ? 'per id' : 'words'} | ${compiled.compileMs.toFixed(0)} | ${per(p.maskMs).toFixed(3)} | ${per(p.filterMs).toFixed(3)} | ${per(p.allowedMs).toFixed(3)} | ${per(p.acceptMs).toFixed(3)} | ${total.toFixed(3)} | ${((100 * total) / step).toFixed(1)}% | ${ratio} |`,
      );
    }
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
