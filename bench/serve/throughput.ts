// Throughput and time-to-first-token of `gsteer serve`, batched vs interleaved, at several
// concurrency levels, in one run (not part of npm test). Usage:
//   node --import tsx bench/serve/throughput.ts [--model models/tiny-demo] [--backend wasm]
//        [--requests 16] [--max-tokens 192] [--concurrency 1,2,4,8] [--group 4]
//        [--modes interleaved,batched,batched+cache] [--workload demo|short] [--rounds 1]
// One server per mode (`--batching off`; `--batching on --prefix-cache-mb 0`; `--batching on`),
// all running, each level measured mode after mode. The workload is the demo's first turns
// (rollout/prompt.ts over data/demo/instances.jsonl, as token ids): requests come in GRPO
// groups of --group identical prompts with their own seeds, ignore_eos so every request
// decodes --max-tokens tokens, streamed so TTFT is measured by the client (request sent ->
// first token chunk). Each level uses other instances (or TURN numbers) than the levels
// before, so the prefix cache only shares what a real run would: the system prompt, and
// a group's identical prompt. `--workload short`: the earlier bench's three ~30-token chat
// prompts instead (decode-bound; what the issue measured 1.36x on). `--rounds R` repeats the
// levels (a shared machine is noisy): tokens/s is the median round. Ratios: against c=1 of
// the same mode, and against interleaved at the same c.
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { serveMetric as metric, startServe } from './serve-child.ts';
import { buildPolicyMessages } from '../../rollout/prompt.ts';
import { encodeChat, qwen3Tokenizer } from '../../core/tokenizer.ts';

const MODES: Record<string, string[]> = {
  interleaved: ['--batching', 'off'],
  batched: ['--batching', 'on', '--prefix-cache-mb', '0'],
  'batched+cache': ['--batching', 'on'],
};

interface Sample {
  ttftMs: number;
  tokens: number;
}

/** fetch, again once when a kept-alive socket was closed under it (the request had not started: idempotent). */
async function post(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (e) {
    if ((e as { cause?: { code?: string } }).cause?.code !== 'ECONNRESET') throw e;
    return fetch(url, init);
  }
}

/** One streamed completion; TTFT = request sent -> first token chunk received. */
async function complete(url: string, model: string, prompt: number[], maxTokens: number, seed: number): Promise<Sample> {
  const t0 = performance.now();
  const res = await post(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      prompt,
      max_tokens: maxTokens,
      temperature: 0.7,
      top_p: 0.95,
      seed,
      ignore_eos: true,
      logprobs: 1,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
      stream: true,
    }),
  });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let ttftMs = NaN;
  let tokens = 0;
  let buffered = '';
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    buffered += decoder.decode(bytes as Uint8Array, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end).replace(/^data: /, '');
      buffered = buffered.slice(end + 2);
      if (event === '[DONE]') continue;
      const chunk = JSON.parse(event) as { choices?: { token_ids?: number[] }[]; error?: { message: string } };
      if (chunk.error) throw new Error(chunk.error.message);
      tokens += chunk.choices?.[0]?.token_ids?.length ?? 0;
      if (tokens > 0 && Number.isNaN(ttftMs)) ttftMs = performance.now() - t0;
    }
  }
  return { ttftMs, tokens };
}

/** `prompts.length` requests, at most `concurrency` in flight. */
async function level(url: string, model: string, prompts: number[][], concurrency: number, maxTokens: number) {
  const samples: Sample[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < prompts.length) {
        const i = next++;
        samples.push(await complete(url, model, prompts[i] as number[], maxTokens, 1000 + i));
      }
    }),
  );
  const wallS = (performance.now() - t0) / 1000;
  return { tokensPerS: samples.reduce((s, x) => s + x.tokens, 0) / wallS, ttft: samples.map((s) => s.ttftMs) };
}

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
}

/** Three short chat prompts (the earlier bench's), with the level in the system prompt so levels share none. */
function shortPrompts(count: number, group: number, variant: number): number[][] {
  const tok = qwen3Tokenizer();
  const questions = ['What should I read about climate policy?', 'Plan a trip to Kyoto for a family of four.', 'Summarize recent work on sparse attention.'];
  return Array.from({ length: count }, (_, i) => {
    const k = variant * Math.ceil(count / group) + Math.floor(i / group);
    return encodeChat(tok, [
      { role: 'system', content: `You refine research requests (${k}).` },
      { role: 'user', content: questions[k % questions.length] as string },
    ]);
  });
}

/** First-turn prompts of the demo instances; `variant` shifts instances and the TURN line so levels share no prompt. */
function firstTurns(count: number, group: number, variant: number): number[][] {
  const tok = qwen3Tokenizer();
  const instances = readFileSync('data/demo/instances.jsonl', 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { query: string; profile?: string });
  return Array.from({ length: count }, (_, i) => {
    const k = variant * Math.ceil(count / group) + Math.floor(i / group);
    const inst = instances[k % instances.length] as { query: string; profile?: string };
    const maxTurns = 12 + Math.floor(k / instances.length);
    return encodeChat(tok, buildPolicyMessages({ query: inst.query, profile: inst.profile ?? '', state: [], history: [], turn: 1, maxTurns }));
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string', default: 'models/tiny-demo' },
      backend: { type: 'string', default: 'wasm' },
      requests: { type: 'string', default: '16' },
      'max-tokens': { type: 'string', default: '192' },
      concurrency: { type: 'string', default: '1,2,4,8' },
      group: { type: 'string', default: '4' },
      modes: { type: 'string', default: 'interleaved,batched,batched+cache' },
      workload: { type: 'string', default: 'demo' },
      rounds: { type: 'string', default: '1' },
    },
  });
  const levels = (values.concurrency as string).split(',').map(Number);
  const requests = Number(values.requests);
  const maxTokens = Number(values['max-tokens']);
  const group = Number(values.group);
  const rounds = Number(values.rounds);
  const modes = (values.modes as string).split(',');
  for (const m of modes) if (!MODES[m]) throw new Error(`--modes: unknown mode ${m}; use ${Object.keys(MODES).join(', ')}`);
  const modelDir = values.model as string;
  const workload = values.workload === 'short' ? shortPrompts : firstTurns;
  if (!['demo', 'short'].includes(values.workload as string)) throw new Error(`--workload must be demo or short but is ${values.workload}`);
  const servers = new Map<string, { url: string; proc: ChildProcess }>();
  try {
    for (const m of modes)
      servers.set(
        m,
        await startServe([
          '--model',
          modelDir,
          '--port',
          '0',
          '--backend',
          values.backend as string,
          '--max-concurrency',
          String(Math.max(...levels)),
          ...(MODES[m] as string[]),
        ]),
      );
    const warm = workload(1, 1, 99)[0] as number[];
    for (const { url } of servers.values()) await complete(url, modelDir, warm, 4, 0); // kernels, operator caches
    // --rounds R: every level R times (new prompts each time); tokens/s is the median of the rounds, TTFT over all requests
    const runs = new Map<string, { tokensPerS: number[]; ttft: number[] }>();
    for (let round = 0; round < rounds; round++) {
      for (const [li, c] of levels.entries()) {
        const prompts = workload(requests, group, round * levels.length + li);
        for (const m of modes) {
          const r = await level(servers.get(m)!.url, modelDir, prompts, c, maxTokens);
          const acc = runs.get(`${m} ${c}`) ?? { tokensPerS: [], ttft: [] };
          acc.tokensPerS.push(r.tokensPerS);
          acc.ttft.push(...r.ttft);
          runs.set(`${m} ${c}`, acc);
          console.error(`round ${round + 1}: ${m} c=${c}: ${r.tokensPerS.toFixed(1)} tok/s, TTFT p50 ${pct(r.ttft, 0.5).toFixed(0)} ms`);
        }
      }
    }
    const rows = levels.flatMap((c) =>
      modes.map((m) => ({ mode: m, c, tokensPerS: pct(runs.get(`${m} ${c}`)!.tokensPerS, 0.5), ttft: runs.get(`${m} ${c}`)!.ttft })),
    );
    const lens = workload(requests, group, 0).map((p) => p.length);
    console.log(
      `\ngsteer serve on ${modelDir} (backend ${values.backend}); ${rounds} round(s), per level and round ${requests} requests x ${maxTokens} tokens in groups of ${group} identical ${values.workload === 'short' ? 'short' : 'first-turn'} prompts of ${Math.min(...lens)}-${Math.max(...lens)} tokens\n`,
    );
    console.log('| mode | c | tokens/s | vs c=1 | vs interleaved | TTFT p50 ms | TTFT p95 ms | TTFT p50 vs interleaved |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      const c1 = rows.find((x) => x.mode === r.mode && x.c === levels[0]) as (typeof rows)[number];
      const inter = rows.find((x) => x.mode === 'interleaved' && x.c === r.c);
      const vs = (a: number, b: number | undefined) => (b ? `${(a / b).toFixed(2)}x` : '-');
      console.log(
        `| ${r.mode} | ${r.c} | ${r.tokensPerS.toFixed(1)} | ${vs(r.tokensPerS, c1.tokensPerS)} | ${vs(r.tokensPerS, inter?.tokensPerS)} | ${pct(r.ttft, 0.5).toFixed(0)} | ${pct(r.ttft, 0.95).toFixed(0)} | ${vs(pct(r.ttft, 0.5), inter && pct(inter.ttft, 0.5))} |`,
      );
    }
    console.log('\n| mode | prompt tokens | computed | from the prefix cache | forward passes |');
    console.log('|---|---|---|---|---|');
    for (const [m, { url }] of servers) {
      const [p, comp, hits, passes] = await Promise.all(
        ['prompt_tokens_total', 'prompt_tokens_computed_total', 'prefix_cache_hits_total', 'forward_passes_total'].map((n) => metric(url, n)),
      );
      console.log(`| ${m} | ${p} | ${comp} | ${hits} | ${passes} |`);
    }
  } finally {
    for (const { proc } of servers.values()) {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    }
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
