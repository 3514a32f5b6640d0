// `gsteer data build` against a real OpenAI-compatible HTTP endpoint (the fake vLLM server,
// answering each step from the rules' own answers: tests/helpers/build-oracle.ts), with
// fenced JSON, <think> blocks, schema violations, a cyclic IEG, 429 with Retry-After and 5xx.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { placementsFor, readRaw, runBuild } from '../../data/build/run.ts';
import { startFakeVllm, type FakeVllm } from '../helpers/fake-vllm.ts';
import { buildOracle, cyclicIeg, oracleAnswer, stepOf } from '../helpers/build-oracle.ts';

const root = join(import.meta.dirname, '../..');
const raw = join(root, 'data/raw-demo');
const split = { seed: 1 };
const quiet = { progress: () => ({ tick() {}, print() {}, done() {} }), log: () => {} };
const fast = { timeoutMs: 60_000, retry: { baseDelayMs: 1, maxDelayMs: 4, maxRetryAfterMs: 5 } };
const files = (dir: string) => ['instances.jsonl', 'user_states.jsonl'].map((f) => readFileSync(join(dir, f), 'utf8'));
const report = (dir: string) => readFileSync(join(dir, 'build_report.json'), 'utf8');
const tmp = () => mkdtempSync(join(tmpdir(), 'gsteer-build-'));

let oracle: Map<string, string>;
let reference: string[];
let llmReport = '';
beforeAll(async () => {
  const ds = readRaw(raw);
  oracle = await buildOracle(ds, placementsFor(ds, split));
  const dir = tmp();
  await runBuild({ raw, out: dir, split, ...quiet });
  reference = files(dir);
});

describe('data build through an OpenAI-compatible endpoint', () => {
  let fake: FakeVllm;
  afterAll(() => fake?.close());

  it('survives fences, thinking, schema violations, a cyclic IEG, 429 and 5xx; same bytes as the rule build; a re-run sends nothing', async () => {
    const cycled = new Set<string>();
    fake = await startFakeVllm({
      seed: 3,
      fence: { rate: 0.3 },
      violateSchema: { on: [2, 11] },
      rateLimit: { on: [4], retryAfter: '1' },
      serverError: { on: [7, 8], status: 503 },
      answer: (req) => {
        // The first ieg request of each prompt answers a cycle; the repair turn gets the real answer.
        const key = req.messages[1]?.content ?? '';
        if (stepOf(req) === 'gsteer_ieg' && !cycled.has(key)) {
          cycled.add(key);
          return cyclicIeg(req);
        }
        return oracleAnswer(oracle, req);
      },
    });
    const out = tmp();
    const llm = { baseUrl: fake.baseUrl, model: 'Qwen/Qwen3-32B', maxRetries: 4, concurrency: 4, ...fast };
    const first = await runBuild({ raw, out, split, llm, ...quiet });
    expect(first.result?.failures).toEqual([]);
    expect(first.problems).toEqual([]);
    expect(files(out)).toEqual(reference);
    expect(fake.counts.fenced).toBeGreaterThan(0);
    expect(fake.counts.thinking).toBeGreaterThan(0);
    expect(fake.counts.violated).toBe(2);
    expect(fake.counts.http_429).toBe(1);
    expect(fake.counts.http_503).toBe(2);
    // every ieg prompt was answered with a cycle once, then repaired with the error fed back
    const iegs = fake.requests.filter((r) => stepOf(r.body as never) === 'gsteer_ieg' && r.outcome === 'ok');
    expect(iegs.some((r) => (r.body.messages as { content: string }[]).some((m) => /cycle/.test(m.content)))).toBe(true);
    // 5 requests per pair + 1 profile per training pair with other training pairs; identical
    // requests (pairs sharing a task's query and rubric, or the same kept targets) go out once
    expect(first.calls.sent + first.calls.cached).toBe(5 * 20 + first.planned.profiles);
    expect(first.calls.sent).toBeLessThanOrEqual(first.planned.total);

    const firstReport = report(out);
    llmReport = firstReport;
    const before = fake.requests.length;
    const again = await runBuild({ raw, out, split, llm, ...quiet });
    expect(fake.requests.length).toBe(before);
    expect(again.calls.sent).toBe(0);
    expect(again.calls.cached).toBe(first.calls.sent + first.calls.cached); // every request of the first run, from the cache
    expect(files(out)).toEqual(reference);
    expect(report(out)).toBe(firstReport);
  }, 60_000);

  it('a step that keeps failing is reported with the pair, the step and the reply; the rest is built', async () => {
    const bad = await startFakeVllm({
      answer: (req) => (stepOf(req) === 'gsteer_seeds' && req.messages[1]?.content.includes('Leo Martins') ? '{"seeds": "no"}' : oracleAnswer(oracle, req)),
    });
    try {
      const out = tmp();
      const s = await runBuild({ raw, out, split, llm: { baseUrl: bad.baseUrl, model: 'Qwen/Qwen3-32B', maxRetries: 1, concurrency: 4, ...fast }, ...quiet });
      const failed = s.result?.failures ?? [];
      expect(failed.map((f) => [f.instanceId, f.step])).toEqual([
        ['leo-career', 'seeds'],
        ['leo-home-energy', 'seeds'],
        ['leo-laptop', 'seeds'],
      ]);
      expect(failed[0]?.reply).toContain('{"seeds": "no"}');
      expect(s.result?.instances).toHaveLength(17);
      expect(s.problems).toEqual([]);
    } finally {
      await bad.close();
    }
  }, 60_000);

  it('a build killed with SIGKILL half way and re-run gives byte-identical output', async () => {
    const slow = await startFakeVllm({ delayMs: 15, answer: (req) => oracleAnswer(oracle, req) });
    try {
      const out = tmp();
      const args = [
        'cli/gsteer.mjs',
        'data',
        'build',
        raw,
        '--out',
        out,
        '--seed',
        '1',
        '--llm-base-url',
        slow.baseUrl,
        '--llm-model',
        'Qwen/Qwen3-32B',
        '--concurrency',
        '2',
      ];
      const child = spawn(process.execPath, args, { cwd: root, stdio: 'ignore' });
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      while (slow.requests.length < 40) await new Promise((r) => setTimeout(r, 20));
      child.kill('SIGKILL');
      expect(await exited).toBeNull();
      const sentBeforeKill = slow.requests.length;
      const rerun = spawn(process.execPath, args, { cwd: root, stdio: 'ignore' });
      expect(await new Promise((r) => rerun.on('exit', r))).toBe(0);
      expect(files(out)).toEqual(reference);
      expect(report(out)).toBe(llmReport); // the uninterrupted LLM build's report
      // the re-run did not repeat what was cached before the kill
      expect(slow.requests.length - sentBeforeKill).toBeLessThan(114);
    } finally {
      await slow.close();
    }
  }, 120_000);
});
