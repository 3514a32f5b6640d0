// `gsteer eval` running episodes: a scripted policy server (tests/rollout/helpers, vLLM
// /v1/completions) that answers from the prompt it is sent (query and turn number), the
// embedded seed simulator, the frozen in-memory user store, the rule extractor and the
// hashed encoder. Scripts (tests/eval/fixture.ts for the dataset):
//   seen-1: RETRIEVE "laptop budget" (u1's memory) -> ASK the seed question of b -> STOP Q_SEEN
//   uu-1:   RETRIEVE "vegetarian meals" -> no results: u2 has no train instance, so it starts
//           empty although the states file has a memory for it -> STOP "Recommend a laptop for me."
//           (pure restatement: no factors)
//   ut-1:   ASK the seed question of f -> STOP Q_FLAT
// Pooled at 0.55 (same premise as cli-trajectories.test.ts: only identical texts match):
//   targets 3 + 2 + 1 = 6, covered a, b, f -> R = 0.5; factors 3 + 0 + 1, matched 2 + 0 + 1 -> P = 0.75
//   F1 = 0.6; WCov = (2 + 1 + 2) / 10 = 0.5; E-WCov = (2 + 2) / 8 = 0.5;
//   mean Ask = (1 + 0 + 1) / 3, mean Retrieve = (1 + 1 + 0) / 3.
import { describe, it, expect, vi, afterEach, afterAll } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../cli/commands/eval.ts';
import { renderTurn } from '../../structured/turn/grammar.ts';
import { baselineSystemPrompt, SYSTEM_PROMPT } from '../../rollout/prompt.ts';
import type { ActionKind, Trajectory } from '../../core/types.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import type { EvalReport } from '../../eval/report.ts';
import { completionBody, startScriptedServer, type ScriptedServer } from '../rollout/helpers/scripted-server.ts';
import { INSTANCES, Q_FLAT, Q_SEEN, writeDataset, removeDatasets } from './fixture.ts';

afterAll(removeDatasets);

const tok = qwen3Tokenizer();
const turn = (action: ActionKind, execute: string) => renderTurn({ state: [], plan: `next: ${action.toLowerCase()}`, action, execute });
const query = (id: string) => INSTANCES.find((i) => i.id === id)!.query;

const SCRIPTS: Record<string, string[]> = {
  [query('seen-1')]: [turn('RETRIEVE', 'laptop budget'), turn('ASK', 'What about for an ecology PhD student?'), turn('STOP', Q_SEEN)],
  [query('uu-1')]: [turn('RETRIEVE', 'vegetarian meals'), turn('STOP', 'Recommend a laptop for me.')],
  [query('ut-1')]: [turn('ASK', 'What about with a quiet neighbourhood?'), turn('STOP', Q_FLAT)],
};

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

/** Replies by (query, turn) read from the prompt, so concurrent episodes get their own script. */
async function scriptedPolicy(): Promise<ScriptedServer> {
  return startScriptedServer((body) => {
    const text = tok.decode(body.prompt as number[]);
    const q = /QUERY: (.*)/.exec(text)?.[1] ?? '';
    const t = Number(/TURN: (\d+) of/.exec(text)?.[1]);
    const reply = SCRIPTS[q]?.[t - 1];
    if (!reply) return { status: 500, body: { error: { message: `no script for ${q} turn ${t}`, type: 'test', param: null, code: 500 } } };
    return { body: completionBody(reply, { promptIds: body.prompt as number[] }) };
  });
}

async function quiet<T>(f: () => Promise<T>): Promise<T> {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  const err = vi.spyOn(console, 'error').mockImplementation(() => {});
  const w = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    return await f();
  } finally {
    log.mockRestore();
    err.mockRestore();
    w.mockRestore();
  }
}

const readTrajs = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);

describe('gsteer eval (episodes)', () => {
  it('runs one episode per test instance in the shared environment and pools the metrics', async () => {
    server = await scriptedPolicy();
    const ds = writeDataset(`policy:\n  server: external\n  baseUrl: ${server.baseUrl}\n  maxRetries: 0\neval:\n  concurrency: 2\n`);
    const out = join(ds.dir, 'gsteer.json');
    expect(await quiet(() => run(['--config', ds.config, '--policy-model', 'base-x', '--out', out]))).toBe(0);

    const trajs = readTrajs(join(ds.dir, 'gsteer.trajectories.jsonl'));
    expect(trajs.map((t) => [t.instanceId, t.termination, t.askCount, t.retrieveCount])).toEqual([
      ['seen-1', 'stop', 1, 1],
      ['uu-1', 'stop', 0, 1],
      ['ut-1', 'stop', 1, 0],
    ]);
    // frozen states: u1 reads its memory; u2 (no train instance) starts empty
    const mem = (t: Trajectory) => (t.turns[0]!.observation.kind === 'memory' ? t.turns[0]!.observation.results.map((r) => r.value) : null);
    expect(mem(trajs[0]!)).toEqual(['under 1200 EUR']);
    expect(mem(trajs[1]!)).toEqual([]);
    expect(trajs.map((t) => t.snapshotId)).toEqual(['u1@1', 'u2@0', 'u1@1']);
    expect(trajs[0]!.turns[1]!.observation).toMatchObject({ kind: 'answer', targetId: 'b' });

    // eval sampling settings and the named model reach the server; the G-STEER prompt is used
    const reqs = server.requests.map((r) => r.body);
    expect(reqs).toHaveLength(7);
    expect(reqs.every((b) => b.model === 'base-x' && b.temperature === 0.7 && b.top_p === 1 && b.max_tokens === 1024)).toBe(true);
    expect(tok.decode(reqs[0]!.prompt as number[])).toContain(SYSTEM_PROMPT);

    const report = JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
    expect(report.method).toEqual({ baseline: 'gsteer', label: 'G-STEER', model: 'base-x', source: 'episodes' });
    const r = report.results[0]!;
    expect(r.threshold).toBe(0.55);
    expect(r.overall).toMatchObject({
      episodes: 3,
      stopped: 3,
      targets: 6,
      coveredTargets: 3,
      factors: 4,
      matchedFactors: 3,
      precision: 0.75,
      recall: 0.5,
      wcov: 0.5,
      ewcov: 0.5,
    });
    expect(r.overall.f1).toBeCloseTo(0.6, 12);
    expect(r.overall.meanAsk).toBeCloseTo(2 / 3, 12);
    expect(r.overall.meanRetrieve).toBeCloseTo(2 / 3, 12);

    // the recorded episodes re-score to the same report
    const again = join(ds.dir, 'again.json');
    await quiet(() => run(['--config', ds.config, '--trajectories', join(ds.dir, 'gsteer.trajectories.jsonl'), '--split', 'test', '--out', again]));
    expect((JSON.parse(readFileSync(again, 'utf8')) as EvalReport).results).toEqual(report.results);
  });

  it('a baseline restricts the menu and the prompt; an action off the menu is an invalid turn', async () => {
    server = await scriptedPolicy();
    const ds = writeDataset(`policy:\n  server: external\n  baseUrl: ${server.baseUrl}\n  maxRetries: 0\neval:\n  concurrency: 1\n`);
    const out = join(ds.dir, 'clarify.json');
    await quiet(() => run(['--config', ds.config, '--baseline', 'clarify', '--out', out]));
    const trajs = readTrajs(join(ds.dir, 'clarify.trajectories.jsonl'));
    // seen-1 and uu-1 start with RETRIEVE, which Clarification (Ask/Stop) does not have
    expect(trajs.map((t) => [t.instanceId, t.termination, t.invalidReason ?? null, t.turns.length])).toEqual([
      ['seen-1', 'invalid', 'unknown_action', 1],
      ['uu-1', 'invalid', 'unknown_action', 1],
      ['ut-1', 'stop', null, 2],
    ]);
    expect(trajs[0]!.turns[0]!.parsed).toEqual({ ok: false, reason: 'unknown_action', detail: "action RETRIEVE is not in this agent's menu (ASK, STOP)" });
    const prompt = tok.decode(server.requests[0]!.body.prompt as number[]);
    expect(prompt).toContain(baselineSystemPrompt(['ASK', 'STOP']));
    expect(prompt).not.toContain('RETRIEVE:');
    expect(server.requests[0]!.body.model).toBe('models/tiny'); // policy.model: the base model
    const r = (JSON.parse(readFileSync(out, 'utf8')) as EvalReport).results[0]!;
    // only ut-1 produced a q*: f covered (w 2 of 10), 1 of 1 factor matched
    expect(r.overall).toMatchObject({ stopped: 1, coveredTargets: 1, factors: 1, matchedFactors: 1, wcov: 0.2, ewcov: 0.25 });
  });

  it('eval.episodesPerInstance: E seeded episodes per instance, episode 0 as before; pooled over all, spread over instances', async () => {
    server = await scriptedPolicy();
    const ds = writeDataset(`policy:\n  server: external\n  baseUrl: ${server.baseUrl}\n  maxRetries: 0\neval:\n  concurrency: 2\n  episodesPerInstance: 2\n`);
    const out = join(ds.dir, 'two.json');
    await quiet(() => run(['--config', ds.config, '--label', 'G-STEER x2', '--out', out]));
    const trajs = readTrajs(join(ds.dir, 'two.trajectories.jsonl'));
    expect(trajs.map((t) => [t.instanceId, t.index])).toEqual([
      ['seen-1', 0],
      ['seen-1', 1],
      ['uu-1', 0],
      ['uu-1', 1],
      ['ut-1', 0],
      ['ut-1', 1],
    ]);
    const twoSeeds = server.requests.map((r) => r.body.seed as number);
    await server.close();
    server = await scriptedPolicy();
    const ds1 = writeDataset(`policy:\n  server: external\n  baseUrl: ${server.baseUrl}\n  maxRetries: 0\n`);
    await quiet(() => run(['--config', ds1.config, '--out', join(ds1.dir, 'one.json')]));
    const oneSeeds = server.requests.map((r) => r.body.seed as number);
    // the second episodes sample with seeds of their own; the first ones with the one-episode seeds
    expect(new Set(twoSeeds).size).toBe(14);
    expect(oneSeeds.every((x) => twoSeeds.includes(x))).toBe(true);

    const report = JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
    expect(report.method.label).toBe('G-STEER x2');
    expect(report.episodesPerInstance).toBe(2);
    // the same scripts twice: every count doubles, every ratio as with one episode (header)
    expect(report.results[0]!.overall).toMatchObject({ episodes: 6, targets: 12, coveredTargets: 6, precision: 0.75, recall: 0.5, wcov: 0.5, ewcov: 0.5 });
    const v = report.spread.results[0]!.views;
    expect([v.overall.instances, v.unseen_user_combined.instances, v.unseen_task_combined.instances, v.both_unseen.instances]).toEqual([3, 1, 1, 0]);
    expect(v.overall.est.wcov).toMatchObject({ value: 0.5, samples: 1000 });
    expect(v.overall.est.wcov.se).toBeGreaterThan(0); // seen-1 covers 3/4 of its weight, uu-1 1/4: resamples differ
  });

  it('refuses an unknown baseline and conflicting policy options with the fix', async () => {
    const ds = writeDataset();
    await expect(run(['--config', ds.config, '--baseline', 'oracle'])).rejects.toThrow(
      '--baseline "oracle" is not a known method; use one of gsteer, direct, memory_rag, clarify, memory_clarify',
    );
    await expect(run(['--config', ds.config, '--trajectories', ds.dir, '--baseline', 'direct'])).rejects.toThrow('only apply when running episodes');
    await expect(run(['--config', ds.config, '--threshold', '1.5', '--trajectories', ds.dir])).rejects.toThrow('--threshold must be a cosine in [-1, 1]');
  });
});
