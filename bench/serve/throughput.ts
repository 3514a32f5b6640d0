// Throughput and time-to-first-token of `gsteer serve` on the tiny model, at concurrency 1
// and 8 (not part of npm test). Usage:
//   node --import tsx bench/serve/throughput.ts [--model DIR] [--backend auto|wasm|cpu]
//        [--requests N] [--max-tokens M] [--concurrency 1,8]
// Without --model it makes the tiny model with `gsteer model init --preset tiny` in a temp
// dir. It starts the server as a child process, sends /v1/completions with token-id
// prompts (the rollout protocol, ignore_eos so every request decodes M tokens), and prints
// a table with ratios against concurrency 1 measured in the same run. Requests stream
// (`stream: true`), so TTFT is measured by the client: request sent -> first token chunk.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { encodeChat, qwen3Tokenizer } from '../../trainer/tokenizer.ts';
import { progressBar } from '../../util/progress.ts';

const CLI = [fileURLToPath(new URL('../../cli/gsteer.mjs', import.meta.url))];

function runCli(args: string[]): Promise<number | null> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [...CLI, ...args], { stdio: 'inherit' });
    p.on('exit', (code) => resolve(code));
  });
}

/** `gsteer model init --preset tiny`; where that command is missing, the same init code in-process. */
async function makeTiny(dir: string, prompts: string[]): Promise<string> {
  if ((await runCli(['model', 'init', '--preset', 'tiny', '--out', dir])) === 0) return 'gsteer model init --preset tiny';
  const { baseKeptIds, initModel, PRESETS } = await import('../../trainer/model/init.ts');
  const tok = qwen3Tokenizer();
  initModel(dir, PRESETS.tiny as NonNullable<typeof PRESETS.tiny>, { seed: 42, keptIds: [...baseKeptIds(), ...prompts.flatMap((p) => tok.encode(p))] });
  return 'initModel(PRESETS.tiny) with byte tokens + specials + prompt words kept';
}

function startServe(modelDir: string, backend: string, maxConcurrency: number): Promise<{ url: string; proc: ChildProcess }> {
  const args = [...CLI, 'serve', '--model', modelDir, '--port', '0', '--backend', backend, '--max-concurrency', String(maxConcurrency)];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve({ url: m[1] as string, proc });
    });
    proc.stderr?.on('data', (d: Buffer) => {
      if (!/ (GET|POST) \//.test(d.toString())) process.stderr.write(d);
    });
    proc.on('exit', (code) => reject(new Error(`gsteer serve exited ${code} before listening`)));
  });
}

interface Sample {
  ttftMs: number;
  latencyMs: number;
  tokens: number;
}

/** One streamed completion; TTFT = request sent -> first token chunk received. */
async function complete(url: string, model: string, prompt: number[], maxTokens: number, seed: number): Promise<Sample> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt, max_tokens: maxTokens, temperature: 0.7, top_p: 0.95, seed, ignore_eos: true, logprobs: 1, return_tokens_as_token_ids: true, return_token_ids: true, stream: true }),
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
  return { ttftMs, latencyMs: performance.now() - t0, tokens };
}

/** `requests` requests, at most `concurrency` in flight. */
async function level(url: string, model: string, prompts: number[][], requests: number, concurrency: number, maxTokens: number) {
  const samples: Sample[] = [];
  const bar = progressBar(`concurrency ${concurrency}`, requests);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const i = next++;
        samples.push(await complete(url, model, prompts[i % prompts.length] as number[], maxTokens, i));
        bar.tick();
      }
    }),
  );
  bar.done();
  const wallS = (performance.now() - t0) / 1000;
  const tokens = samples.reduce((s, x) => s + x.tokens, 0);
  return { concurrency, requests, tokensPerS: tokens / wallS, ttft: samples.map((s) => s.ttftMs), latency: samples.map((s) => s.latencyMs) };
}

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      backend: { type: 'string', default: 'auto' },
      requests: { type: 'string', default: '16' },
      'max-tokens': { type: 'string', default: '32' },
      concurrency: { type: 'string', default: '1,8' },
    },
  });
  const levels = (values.concurrency as string).split(',').map(Number);
  const requests = Number(values.requests);
  const maxTokens = Number(values['max-tokens']);
  const questions = ['What should I read about climate policy?', 'Plan a trip to Kyoto for a family of four.', 'Summarize recent work on sparse attention.'];
  const system = 'You refine research requests.';
  const tmp = values.model ? null : mkdtempSync(join(tmpdir(), 'gsteer-bench-serve-'));
  const modelDir = values.model ?? join(tmp as string, 'tiny');
  const made = tmp ? await makeTiny(modelDir, [system, ...questions]) : 'given';
  const { url, proc } = await startServe(modelDir, values.backend as string, Math.max(...levels));
  try {
    const tok = qwen3Tokenizer();
    const prompts = questions.map((q) => encodeChat(tok, [{ role: 'system', content: system }, { role: 'user', content: q }]));
    await complete(url, modelDir, prompts[0] as number[], 4, 0); // warm-up (kernels, caches)
    const rows = [];
    for (const c of levels) rows.push(await level(url, modelDir, prompts, requests, c, maxTokens));
    const base = rows[0] as (typeof rows)[number];
    console.log(`\ngsteer serve on ${modelDir} (model: ${made}; backend ${values.backend}; ${requests} requests x ${maxTokens} tokens per level, prompts ~${prompts[0]?.length} tokens)\n`);
    console.log('| concurrency | tokens/s | vs c=1 | TTFT p50 ms | TTFT p95 ms | p50 vs c=1 | latency p50 ms |');
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows) {
      const p50 = pct(r.ttft, 0.5);
      console.log(
        `| ${r.concurrency} | ${r.tokensPerS.toFixed(1)} | ${(r.tokensPerS / base.tokensPerS).toFixed(2)}x | ${p50.toFixed(1)} | ${pct(r.ttft, 0.95).toFixed(1)} | ${(p50 / pct(base.ttft, 0.5)).toFixed(2)}x | ${pct(r.latency, 0.5).toFixed(0)} |`,
      );
    }
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
