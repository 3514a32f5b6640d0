// `gsteer data build` (every step by the LLM) against a real `gsteer serve` child process on
// the tiny demo model (models/tiny-demo), over HTTP on 127.0.0.1, on two pairs of
// data/raw-demo. A recording pass-through proxy between the two keeps every request body
// serve received and every response it sent. The tiny model is no language model beyond the
// demo's turn grammar: under a step's JSON schema its answers are JSON-shaped but wrong or cut
// at max_tokens, so the test asserts what must hold whatever it answers: each pair is built or
// named with its step and error (never silently dropped, never a crash), every request carried
// the step's JSON schema as response_format and serve applied it, the call records count
// exactly what serve got, and a re-run sends no request that was answered before (the request
// cache; a refused call is not stored, endpoints/cache.ts, so only those are asked again).
// What the tiny model does (seen when this was written, not asserted): greedy decoding under
// the candidates schema emits whitespace, or integers in the rubricItems array, until
// max_tokens, so both pairs fail at `candidates` with "truncated" and the re-run asks the
// same refused calls again and gets the same replies (same bytes written).
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STEP_NAMES } from '../../data/build/prompts.ts';

const root = join(import.meta.dirname, '../..');
const demoRaw = join(root, 'data/raw-demo');
type Exchange = { body: Record<string, unknown>; status: number; reply: Record<string, unknown> | null };

let work: string;
let serve: ChildProcess;
let serveUrl: string;
let proxy: Server;
let proxyUrl: string;
const exchanges: Exchange[] = [];

function startServe(): Promise<string> {
  serve = spawn(
    process.execPath,
    ['cli/gsteer.mjs', 'serve', '--model', join(root, 'models/tiny-demo'), '--port', '0', '--backend', 'wasm', '--served-model-name', 'tiny'],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    serve.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    serve.on('exit', (code) => reject(new Error(`gsteer serve exited ${code} before listening: ${out}`)));
  });
}

/** Forwards every request to serve unchanged and records the body and the answer. */
function startProxy(): Promise<string> {
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const up = await fetch(`${serveUrl}${req.url}`, {
        method: req.method,
        headers: { 'content-type': 'application/json' },
        body: req.method === 'GET' ? undefined : raw,
      });
      const text = await up.text();
      if (req.method === 'POST') exchanges.push({ body: JSON.parse(raw), status: up.status, reply: /^\s*\{/.test(text) ? JSON.parse(text) : null });
      res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' });
      res.end(text);
    });
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(proxy.address() as { port: number }).port}`)));
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'gsteer-build-serve-'));
  // Two pairs of the demo fixture (one train, one test), the tasks and users as they are.
  const raw = join(work, 'raw');
  mkdirSync(raw);
  for (const f of ['tasks.jsonl', 'users.jsonl']) copyFileSync(join(demoRaw, f), join(raw, f));
  const pairs = readFileSync(join(demoRaw, 'pairs.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const pick = [pairs.find((p) => p.userId === 'maya' && p.taskId === 'trip'), pairs.find((p) => p.userId === 'tomas' && p.taskId === 'laptop')];
  writeFileSync(join(raw, 'pairs.jsonl'), pick.map((p, i) => `${JSON.stringify({ ...p, split: i === 0 ? 'train' : 'test' })}\n`).join(''));
  serveUrl = await startServe();
  proxyUrl = await startProxy();
}, 120_000);

afterAll(async () => {
  if (serve && serve.exitCode === null) {
    const exited = new Promise((r) => serve.on('exit', r));
    serve.kill('SIGTERM');
    await exited;
  }
  await new Promise((r) => (proxy ? proxy.close(r) : r(null)));
  if (work) rmSync(work, { recursive: true, force: true });
});

function build(out: string): Promise<{ code: number | null; stdout: string }> {
  const args = ['cli/gsteer.mjs', 'data', 'build', join(work, 'raw'), '--out', out, '--seed', '1', '--llm-base-url', `${proxyUrl}/v1`, '--llm-model', 'tiny'];
  const child = spawn(process.execPath, [...args, '--max-retries', '1', '--concurrency', '2', '--max-tokens', '48'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.resume();
  return new Promise((r) => child.on('exit', (code) => r({ code, stdout })));
}

const records = (out: string) =>
  readFileSync(join(out, 'llm_calls.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { status: string; error: string | null });
const generated = async () => Number(/^gsteer_serve:generation_tokens_total (\d+)$/m.exec(await (await fetch(`${serveUrl}/metrics`)).text())?.[1]);
type Failure = { instanceId: string; step: string; error: string; reply: string | null };

describe('data build against a real `gsteer serve` on the tiny model', () => {
  it('builds or names each pair with its step and error; every request under a JSON schema; a re-run asks nothing answered', async () => {
    const out = join(work, 'out');
    const first = await build(out);
    expect(existsSync(join(out, 'build_report.json'))).toBe(true);
    const report = JSON.parse(readFileSync(join(out, 'build_report.json'), 'utf8')) as { steps: string; failures: Failure[] };
    expect(report.steps).toBe('llm');
    const built = readFileSync(join(out, 'instances.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { id: string }).id);
    const failed = report.failures.map((f) => f.instanceId);
    // Every pair is accounted for: built, or named with the step that failed and why.
    expect([...built, ...failed].sort()).toEqual(['maya-trip', 'tomas-laptop']);
    for (const f of report.failures) {
      expect(STEP_NAMES).toContain(f.step);
      expect(f.error.length).toBeGreaterThan(0);
      expect(first.stdout).toContain(`not built: ${f.instanceId} at step ${f.step}: `);
    }
    expect(first.stdout).toMatch(new RegExp(`^built ${built.length} of 2 instances`, 'm'));
    expect(first.code).toBe(report.failures.length ? 1 : 0);

    // Serve got requests, each with the step's JSON schema, and applied it to each answer.
    const sent = exchanges.length;
    expect(sent).toBeGreaterThan(0);
    for (const x of exchanges) {
      const rf = x.body.response_format as { type: string; json_schema: { name: string; schema: Record<string, unknown> } };
      expect(rf.type).toBe('json_schema');
      expect(rf.json_schema.name).toMatch(new RegExp(`^gsteer_(${STEP_NAMES.join('|')})$`));
      expect(rf.json_schema.schema.type).toBe('object');
      expect(x.body.max_tokens ?? x.body.max_completion_tokens).toBe(48);
      expect(x.status).toBe(200);
      expect((x.reply?.gsteer_structured_outputs as { type: string } | undefined)?.type).toBe('json');
    }
    // The call records in the build dir count every attempt serve received, nothing else.
    const firstRecords = records(out);
    expect(firstRecords.length).toBe(sent);
    const refused = firstRecords.filter((r) => r.status.startsWith('reply_error:')).length;
    const ok = firstRecords.filter((r) => r.status === 'ok').length;
    expect(ok + refused).toBe(sent);
    expect(refused > 0).toBe(report.failures.length > 0);
    // A failure for refused replies names the kind (truncated, schema, ...) its records show,
    // and the report keeps the last reply.
    for (const f of report.failures) {
      const kind = /was refused; last: ([a-z_]+) /.exec(f.error)?.[1];
      if (!kind) continue; // an HTTP failure (e.g. a 400 for a prompt over the context) names itself
      expect(firstRecords.map((r) => r.status)).toContain(`reply_error:${kind}`);
      expect(f.reply).not.toBeNull();
    }

    // Re-run into the same dir: every answered call comes from DIR/cache; only the refused
    // calls are asked again (the cache stores no failure), and they fail the same way.
    const bytes = ['instances.jsonl', 'user_states.jsonl', 'build_report.json'].map((f) => readFileSync(join(out, f), 'utf8'));
    const tokensBefore = await generated();
    const second = await build(out);
    const again = exchanges.slice(sent);
    const secondRecords = records(out).slice(firstRecords.length);
    expect(secondRecords.filter((r) => r.status === 'cached').length).toBe(ok);
    expect(secondRecords.filter((r) => r.status === 'ok').length).toBe(0);
    expect(again.length).toBeLessThanOrEqual(refused); // a call refused once, then answered, is cached
    expect(again.length > 0).toBe(report.failures.length > 0);
    const firstBodies = new Set(exchanges.slice(0, sent).map((x) => JSON.stringify(x.body)));
    for (const x of again) expect(firstBodies.has(JSON.stringify(x.body))).toBe(true);
    if (refused === 0) expect(await generated()).toBe(tokensBefore); // serve decoded nothing
    expect(second.code).toBe(first.code);
    expect(['instances.jsonl', 'user_states.jsonl', 'build_report.json'].map((f) => readFileSync(join(out, f), 'utf8'))).toEqual(bytes);
  }, 240_000);
});
