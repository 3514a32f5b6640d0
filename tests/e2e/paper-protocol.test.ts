// Must-show (issue 24): the paper's protocol end to end on this machine. configs/paper.yaml
// with its endpoints pointed at local servers: the embedded `gsteer serve` on a tiny random
// Qwen3 as the policy, and for the simulator, the memory judge and the factor extractor a
// fake vLLM serving Qwen3 (tests/helpers/fake-vllm.ts). A short GRPO run starts with every
// user state empty; `gsteer eval --run` freezes that run's final states (and says which file),
// and a test instance's interaction writes nothing. The same run against a server that
// answers 429 (Retry-After) and 5xx at seeded rates finishes with the same rewards (same
// seeds), and the per-role call metrics count the retries.
// Departures for a CPU test: the embedded encoder (no all-mpnet ONNX here), constrained
// rollouts (a random model writes no valid turn unconstrained), SFT off, tiny sizes.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMetrics } from '../../monitor/sink.ts';
import { startFakeVllm, type FakeChatRequest, type FakeVllm, type FakeVllmOptions } from '../helpers/fake-vllm.ts';
import { cli, REPO, removeRuns, tempRun, writeConfig } from './helpers.ts';

const t = tempRun('paper');
const servers: FakeVllm[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await removeRuns(t);
});

const IDS = ['maya-trip', 'henrik-diabetes', 'maya-car', 'dev-cafe']; // two train, a test of a seen user, a test of an unseen one
const lastUser = (req: FakeChatRequest) => [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';

/** The fake Qwen3's answers, a function of the request only (so every run gets the same). */
function answer(req: FakeChatRequest): string {
  const system = req.messages.find((m) => m.role === 'system')?.content ?? '';
  switch (req.response_format?.json_schema?.name) {
    case 'user_answer': {
      const m = /- id: (\S+)\n(?:.*\n){2}\s*seed answer: (.*)/.exec(system);
      return JSON.stringify(m ? { target_id: m[1], answer: m[2] } : { target_id: null, answer: 'No preference.' });
    }
    case 'memory_verdict': {
      const covered = lastUser(req).split('COVERED SLOTS:')[1] ?? '';
      return JSON.stringify({ keep: [...covered.matchAll(/^- (.+?) \| purpose:/gm)].map((x) => x[1]), profile_sentence: null });
    }
    case 'framing_factors':
      return JSON.stringify({ factors: [/REFINED QUERY: (.*)/.exec(lastUser(req))?.[1] ?? ''].filter(Boolean) });
    case 'gsteer_sft_turn': // the SFT teacher rendering a turn's Plan / Execute (data/sft/render.ts)
      return JSON.stringify({
        plan: 'Teacher plan: the evidence changed, so the next action follows.',
        execute: /Action: ASK/.test(lastUser(req)) ? 'What matters most to you here?' : 'user preferences for this request',
      });
    default: // the SFT teacher: plain text, q* on one line
      return 'Find research on this topic within the constraints the user gave.';
  }
}

let model = '';
let instances = '';
beforeAll(async () => {
  model = join(t.dir, 'tiny');
  const init = await cli(['model', 'init', '--preset', 'tiny', '--out', model, '--seed', '1'], { GSTEER_PARTS: 'real' }).done;
  expect(init.code, init.stderr).toBe(0);
  const all = readFileSync(join(REPO, 'data/demo/instances.jsonl'), 'utf8').trim().split('\n');
  instances = join(t.dir, 'paper-instances.jsonl');
  writeFileSync(instances, all.filter((l) => IDS.includes(JSON.parse(l).id)).join('\n') + '\n');
}, 120_000);

async function configure(runName: string, fake: FakeVllmOptions) {
  const server = await startFakeVllm({ answer, ...fake });
  servers.push(server);
  const over = {
    runName,
    runDir: join(t.dir, 'runs'),
    data: { instances: [instances] },
    policy: { server: 'embedded', model },
    simulator: { baseUrl: server.baseUrl, maxRetries: 8 },
    judge: { baseUrl: server.baseUrl, maxRetries: 8 },
    encoder: { kind: 'embedded' },
    rollout: { groupSize: 2, maxTurns: 2, maxTokens: 64, concurrency: 2, constrained: true },
    grpo: { maxUpdates: 2, learningRate: 1e-3, microBatchSize: 2 },
    lora: { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] },
    sft: { enabled: false, ordersPerSubgraph: 2, memorySamples: 1, stopPoints: 1, lateActivation: 'graph' }, // the one-sample scale: few teacher calls
    eval: {
      maxTokens: 64,
      concurrency: 2,
      extractor: { baseUrl: server.baseUrl, model: 'Qwen/Qwen3-32B', chatTemplateKwargs: { enable_thinking: false }, maxRetries: 8 },
    },
    trainer: { backend: 'auto' },
    checkpoint: { every: 1, keep: 2 },
    queues: { prefix: `${t.prefix}:${runName}` },
  };
  return { server, file: writeConfig(t.dir, over), runDir: join(t.dir, 'runs', runName) };
}

async function train(runName: string, fake: FakeVllmOptions) {
  const c = await configure(runName, fake);
  const x = await cli(['train', '--config', join(REPO, 'configs/paper.yaml'), '--config', c.file], { GSTEER_PARTS: 'real' }).done;
  expect(x.code, x.stderr).toBe(0);
  return { ...c, stderr: x.stderr };
}

describe('e2e: the paper protocol against local endpoints', () => {
  it("GRPO starts empty, eval freezes the run's final states, and 429/5xx faults change no reward", async () => {
    // SFT's scaffolds with the LLM teacher (the judge's server, role "teacher")
    const sft = await configure('sft', {});
    const examples = join(t.dir, 'sft-examples.jsonl');
    const b = await cli(['sft', 'build', '--data', instances, '--out', examples, '--config', join(REPO, 'configs/paper.yaml'), '--config', sft.file], {
      GSTEER_PARTS: 'real',
    }).done;
    expect(b.code, b.stderr).toBe(0);
    const teacherCalls = sft.server.requests.filter((r) =>
      String((r.body.messages as { content: string }[] | undefined)?.[0]?.content).startsWith('You rewrite a research request'),
    );
    expect(teacherCalls.length).toBeGreaterThan(0);
    expect(teacherCalls.every((r) => (r.body.chat_template_kwargs as { enable_thinking?: boolean } | undefined)?.enable_thinking === false)).toBe(true);
    expect(readFileSync(examples, 'utf8')).toContain('Find research on this topic within the constraints the user gave.');

    const clean = await train('clean', {});
    expect(clean.stderr).toContain('GRPO starts with every user state empty');
    const m = readMetrics(join(clean.runDir, 'metrics.jsonl'));
    expect(m.map((r) => r.step)).toEqual([1, 2]);
    // every role that called went through endpoints/ and was recorded per update
    const sum = (k: string) => m.reduce((s, r) => s + ((r[k] as number | undefined) ?? 0), 0);
    expect(sum('llm/policy/calls')).toBeGreaterThan(0);
    expect(sum('llm/simulator/calls')).toBeGreaterThan(0);
    expect(sum('llm/judge/calls')).toBe(2); // one group per update, one verdict each
    expect(sum('llm/simulator/errors') + sum('llm/judge/errors')).toBe(0);
    expect(clean.server.counts.thinking ?? 0).toBe(0); // thinking switched off for Qwen3
    expect(readFileSync(join(clean.runDir, 'llm_calls.jsonl'), 'utf8')).not.toMatch(/EMPTY|Bearer|seed answer/);

    // eval freezes the run's final states and never writes them
    const finalStates = join(clean.runDir, 'steps', 'step-000002', 'user_states.jsonl');
    const before = readFileSync(finalStates, 'utf8');
    const out = join(t.dir, 'eval', 'gsteer.json');
    const ev = await cli(['eval', '--config', join(REPO, 'configs/paper.yaml'), '--config', clean.file, '--run', clean.runDir, '--out', out], {
      GSTEER_PARTS: 'real',
    }).done;
    expect(ev.code, ev.stderr).toBe(0);
    expect(ev.stderr).toContain(`frozen user states: ${finalStates} (--run: the final states of ${clean.runDir}, update 2)`);
    expect(readFileSync(finalStates, 'utf8')).toBe(before);
    const evalTrajs = readFileSync(out.replace(/\.json$/, '.trajectories.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { instanceId: string });
    expect(evalTrajs.map((x) => x.instanceId).sort()).toEqual(['dev-cafe', 'maya-car']);
    // the eval's simulator calls, recorded under the run's eval/ and summarized (both test
    // episodes of this seed end at max turns, with no q* for the extractor)
    expect(ev.stderr).toMatch(/LLM calls: .*llm\/simulator\/calls [1-9]/);
    expect(readFileSync(join(t.dir, 'runs', 'clean', 'eval', 'llm_calls.jsonl'), 'utf8')).toContain('"role":"simulator"');

    // the same run with 429 (Retry-After 0) and 5xx at seeded rates
    const faulty = await train('faults', { rateLimit: { rate: 0.3, retryAfter: '0' }, serverError: { rate: 0.2, status: 503 }, seed: 11 });
    expect((faulty.server.counts.http_429 ?? 0) + (faulty.server.counts.http_503 ?? 0)).toBeGreaterThan(0);
    const f = readMetrics(join(faulty.runDir, 'metrics.jsonl'));
    const rewards = (rs: typeof m) => rs.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => k === 'reward' || k.startsWith('rewards/'))));
    expect(rewards(f)).toEqual(rewards(m));
    const fsum = (k: string) => f.reduce((s, r) => s + ((r[k] as number | undefined) ?? 0), 0);
    const retried = ['simulator', 'judge'].reduce((s, role) => s + fsum(`llm/${role}/retries`), 0);
    const faults = (faulty.server.counts.http_429 ?? 0) + (faulty.server.counts.http_503 ?? 0);
    expect(retried).toBe(faults); // every fault answered was retried and counted, in the update that made the call
    expect(fsum('llm/simulator/calls') + fsum('llm/judge/calls')).toBe(sum('llm/simulator/calls') + sum('llm/judge/calls') + faults);
  }, 600_000);
});
