// The episode loop (method §3) against a scripted policy server speaking the vLLM
// /v1/completions protocol, the embedded simulator and an in-memory user store. Expected
// prompts are rebuilt by hand from the script (state and history as the policy must see
// them), so a loop that feeds the wrong state, history or observation fails here.
import { describe, it, expect, afterEach } from 'vitest';
import { InstanceSchema } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { cosine } from '../../core/encoder.ts';
import { runEpisode, turnSeed, type EpisodeOptions } from '../../rollout/episode.ts';
import { OpenAIPolicyClient } from '../../rollout/policy-client.ts';
import { buildPolicyMessages, type HistoryEntry } from '../../rollout/prompt.ts';
import { parseTurn } from '../../structured/turn/grammar.ts';
import { SeedSimulator } from '../../rollout/simulator-seed.ts';
import { NON_COMMITTAL } from '../../rollout/simulator.ts';
import { InMemoryUserStore } from '../../rollout/user-store-memory.ts';
import type { EvidenceSlot, Observation, Trajectory } from '../../core/types.ts';
import { encodeChat, IM_END_ID, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { completionBody, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { specHash } from '../../structured/constraint-spec.ts';

const tok = qwen3Tokenizer();
const encoder = new HashedEncoder(512);
const instance = InstanceSchema.parse({
  id: 'inst-1',
  userId: 'u1',
  taskId: 'laptop',
  split: 'train',
  query: 'Which laptop should I buy for my research?',
  profile: 'PhD student in ecology.',
  persona: ['Flies to conferences abroad twice a year'],
  targets: [
    {
      id: 'budget',
      description: 'the spending limit for the laptop',
      seedQuestion: 'What is your budget for the laptop?',
      seedAnswer: 'Under 1200 EUR.',
      weight: 1,
      essential: true,
    },
    {
      id: 'travel',
      description: 'how often the user travels with the laptop',
      seedQuestion: 'Will you travel with the laptop?',
      seedAnswer: 'Yes, I fly to conferences abroad twice a year.',
      weight: 1,
    },
    {
      id: 'adapter',
      description: 'power plugs and adapters needed in the countries visited',
      seedQuestion: 'Which countries do you travel to, for power adapters?',
      seedAnswer: 'Mostly the UK and the US.',
      weight: 0.5,
      lateActivatable: true,
    },
  ],
  edges: [['travel', 'adapter']],
});

const slot = (name: string, purpose: string, status: EvidenceSlot['status'], source: EvidenceSlot['source'], value = ''): EvidenceSlot => ({
  name,
  purpose,
  status,
  source,
  value,
});
const S0 = [slot('budget', 'spending limit', 'uncovered', 'memory'), slot('travel', 'travel with the laptop', 'uncovered', 'dialogue')];
const S1 = [slot('budget', 'spending limit', 'covered', 'memory', 'under 1200 EUR'), slot('travel', 'travel with the laptop', 'uncovered', 'dialogue')];
const S3 = [
  S1[0]!,
  slot('travel', 'travel with the laptop', 'covered', 'dialogue', 'flies abroad twice a year'),
  slot('adapter', 'power adapters', 'uncovered', 'dialogue'),
];
const S4 = [S3[0]!, S3[1]!, slot('adapter', 'power adapters', 'covered', 'dialogue', 'UK and US')];
const Q_ADAPTER = 'Which countries do you visit, so I know which power adapters you need?';
const Q_TRAVEL = 'Will you travel with the laptop?';
const Q_STAR = 'Recommend a laptop under 1200 EUR for an ecology PhD student who flies to the UK and the US twice a year.';

const turnText = (state: EvidenceSlot[], plan: string, action: string, execute: string) =>
  [
    'STATE:',
    ...state.map((s) => `- ${s.name} | purpose: ${s.purpose} | status: ${s.status} | source: ${s.source} | value: ${s.value}`.trimEnd()),
    `PLAN: ${plan}`,
    `ACTION: ${action}`,
    `EXECUTE: ${execute}`,
  ].join('\n');

const FULL = [
  turnText(S0, 'check memory for the budget', 'RETRIEVE', 'laptop budget'),
  turnText(S1, 'budget found; ask about adapters', 'ASK', Q_ADAPTER),
  turnText(S1, 'no answer; ask about travel first', 'ASK', Q_TRAVEL),
  turnText(S3, 'travel known; adapters matter now', 'ASK', Q_ADAPTER),
  turnText(S4, 'all covered', 'STOP', Q_STAR),
];

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function setup(script: (string | { text: string; finish: 'length' })[]) {
  server = await startScriptedServer((body, n) => {
    const step = script[n];
    if (step === undefined) return { status: 500, body: { error: { message: 'script exhausted', type: 'test', param: null, code: 500 } } };
    const { text, finish } = typeof step === 'string' ? { text: step, finish: 'stop' as const } : step;
    return { body: completionBody(text, { promptIds: body.prompt as number[], finish, logprob: (i) => -0.05 * ((i % 7) + 1) }) };
  });
  const store = new InMemoryUserStore(encoder);
  await store.init([
    { userId: 'u1', profile: 'Prefers Linux.', memories: [{ name: 'budget', purpose: 'spending limit', value: 'under 1200 EUR', sourceInstance: 'old-1' }] },
  ]);
  const deps = {
    policy: new OpenAIPolicyClient({ baseUrl: server.baseUrl, apiKeyEnv: 'GSTEER_TEST_NONE', timeoutMs: 5000, maxRetries: 0 }),
    simulator: new SeedSimulator(encoder, 0.35),
    store,
    tokenizer: tok,
  };
  return { deps, store, server };
}

const opts = (maxTurns = 12): EpisodeOptions => ({
  runId: 'run-t',
  groupId: 'g-7',
  index: 2,
  policyVersion: 3,
  model: 'policy-v3',
  snapshotId: 'u1@1',
  seed: 42,
  rollout: { maxTurns, maxTokens: 128, temperature: 0.7, topP: 0.95, retrieveCandidates: 15, retrieveTopK: 3 },
});

function expectedPrompt(state: EvidenceSlot[], history: HistoryEntry[], turn: number, maxTurns = 12): number[] {
  return encodeChat(tok, buildPolicyMessages({ query: instance.query, profile: 'PhD student in ecology. Prefers Linux.', state, history, turn, maxTurns }));
}

function completion(text: string, finish: 'stop' | 'length' = 'stop') {
  const ids = [...tok.encode(text), ...(finish === 'stop' ? [IM_END_ID] : [])];
  return { completionIds: ids, logprobs: ids.map((_, i) => -0.05 * ((i % 7) + 1)) };
}

describe('runEpisode', () => {
  it('Retrieve, Ask (late target inactive, then parent, then activated), Stop: the exact trajectory', async () => {
    const { deps } = await setup(FULL);
    const traj = await runEpisode(deps, instance, opts());

    const [qv, mv] = await encoder.embed(['laptop budget', 'budget: spending limit: under 1200 EUR']);
    const memObs: Observation = {
      kind: 'memory',
      query: 'laptop budget',
      results: [{ name: 'budget', purpose: 'spending limit', value: 'under 1200 EUR', score: cosine(qv!, mv!) }],
    };
    const obs: Observation[] = [
      memObs,
      { kind: 'answer', question: Q_ADAPTER, answer: NON_COMMITTAL, targetId: null }, // adapter is inactive before travel is answered
      { kind: 'answer', question: Q_TRAVEL, answer: 'Yes, I fly to conferences abroad twice a year.', targetId: 'travel' },
      { kind: 'answer', question: Q_ADAPTER, answer: 'Mostly the UK and the US.', targetId: 'adapter' }, // late-activated
      { kind: 'none' },
    ];
    const states = [S0, S1, S1, S3, S4];
    const hist: HistoryEntry[] = [
      { action: 'RETRIEVE', execute: 'laptop budget', observation: obs[0]! },
      { action: 'ASK', execute: Q_ADAPTER, observation: obs[1]! },
      { action: 'ASK', execute: Q_TRAVEL, observation: obs[2]! },
      { action: 'ASK', execute: Q_ADAPTER, observation: obs[3]! },
    ];
    const expected: Trajectory = {
      version: 1,
      runId: 'run-t',
      instanceId: 'inst-1',
      userId: 'u1',
      groupId: 'g-7',
      index: 2,
      policyVersion: 3,
      snapshotId: 'u1@1',
      turns: FULL.map((text, i) => ({
        index: i,
        // turn i sees the state written at turn i-1 (empty at turn 1) and the history before it
        tokens: { promptIds: expectedPrompt(i === 0 ? [] : states[i - 1]!, hist.slice(0, i), i + 1), ...completion(text) },
        completionText: text,
        parsed: parseTurn(text),
        observation: obs[i]!,
      })),
      finalSlots: S4,
      askedQuestions: [Q_ADAPTER, Q_TRAVEL, Q_ADAPTER],
      retrieveCount: 1,
      askCount: 3,
      termination: 'stop',
      refinedQuery: Q_STAR,
    };
    expect(traj).toEqual(expected);
    expect(traj.turns.every((t) => t.parsed.ok)).toBe(true);
    // the server saw exactly the prompt ids the trajectory records, with per-turn seeds
    expect(server!.requests.map((r) => r.body.prompt)).toEqual(traj.turns.map((t) => t.tokens.promptIds));
    const seeds = server!.requests.map((r) => r.body.seed);
    expect(seeds).toEqual([1, 2, 3, 4, 5].map((t) => turnSeed(42, 'g-7', 2, t)));
    expect(new Set(seeds).size).toBe(5);
    expect(server!.requests.every((r) => r.body.model === 'policy-v3' && r.body.max_tokens === 128)).toBe(true);
    // the prompt of turn 3 shows the non-committal answer to the policy
    expect(tok.decode(traj.turns[2]!.tokens.promptIds)).toContain(`[2] ASK: ${Q_ADAPTER}\n  USER: ${NON_COMMITTAL}`);
    // JSON-serializable without loss
    expect(JSON.parse(JSON.stringify(traj))).toEqual(traj);
  });

  it('a rerun with the same seeds is identical; a group snapshot ignores later updates', async () => {
    const { deps, store } = await setup([...FULL, ...FULL]);
    const a = await runEpisode(deps, instance, opts());
    await store.update('u1', { memories: [{ name: 'laptop_budget', purpose: 'laptop budget', value: 'laptop budget raised to 2000 EUR' }] });
    const b = await runEpisode(deps, instance, opts());
    expect(b).toEqual(a); // still reads u1@1
  });

  it('unparseable output ends the episode as invalid with its reason', async () => {
    const junk = 'Sure! I think we should ask about the budget.';
    const { deps } = await setup([FULL[0]!, junk]);
    const traj = await runEpisode(deps, instance, opts());
    expect(traj.termination).toBe('invalid');
    expect(traj.invalidReason).toBe('unexpected_line');
    expect(traj.turns).toHaveLength(2);
    expect(traj.turns[1]).toMatchObject({ index: 1, completionText: junk, parsed: { ok: false, reason: 'unexpected_line' }, observation: { kind: 'none' } });
    expect(traj.turns[1]!.tokens.completionIds).toEqual(completion(junk).completionIds);
    expect(traj.finalSlots).toEqual(S0); // the last state the policy wrote validly
    expect(traj.refinedQuery).toBeNull();
    expect([traj.retrieveCount, traj.askCount]).toEqual([1, 0]);
  });

  it('a completion cut at max_tokens is invalid (truncated) even if its text would parse', async () => {
    const { deps } = await setup([{ text: FULL[4]!, finish: 'length' }]);
    const traj = await runEpisode(deps, instance, opts());
    expect(traj.termination).toBe('invalid');
    expect(traj.invalidReason).toBe('truncated');
    expect(traj.turns[0]!.parsed).toEqual({
      ok: false,
      reason: 'truncated',
      detail: `no end of turn within max_tokens=128 (${tok.encode(FULL[4]!).length} tokens sampled)`,
    });
    expect(traj.turns[0]!.tokens.completionIds.at(-1)).not.toBe(IM_END_ID);
    expect(traj.finalSlots).toEqual([]);
  });

  it('maxTurns without STOP ends as max_turns (non-stop), the last prompt says so', async () => {
    const { deps } = await setup([FULL[0]!, FULL[2]!]);
    const traj = await runEpisode(deps, instance, opts(2));
    expect(traj.termination).toBe('max_turns');
    expect(traj.invalidReason).toBeUndefined();
    expect(traj.refinedQuery).toBeNull();
    expect(traj.turns).toHaveLength(2);
    expect([traj.retrieveCount, traj.askCount, traj.askedQuestions]).toEqual([1, 1, [Q_TRAVEL]]);
    expect(server!.requests).toHaveLength(2);
    expect(tok.decode(traj.turns[1]!.tokens.promptIds)).toContain('TURN: 2 of 2\n');
    expect(tok.decode(traj.turns[1]!.tokens.promptIds)).toContain('This is the last turn: STOP now.');
    expect(traj.finalSlots).toEqual(S1);
  });

  it('constrained (rollout.constrained): every call sends the policy grammar, every turn records the constraint', async () => {
    const { deps } = await setup([FULL[0]!, FULL[4]!]);
    const o = opts();
    const traj = await runEpisode(deps, instance, { ...o, rollout: { ...o.rollout, constrained: true } });
    expect(traj.termination).toBe('stop');
    expect(server!.requests.map((r) => r.body.structured_outputs)).toEqual([{ grammar: POLICY_GRAMMAR }, { grammar: POLICY_GRAMMAR }]);
    // the scripted server reports nothing (as vLLM): the grammar alone, with the request's max_tokens
    const sha = specHash({ type: 'grammar', grammar: POLICY_GRAMMAR });
    expect(traj.turns.map((t) => t.constraint)).toEqual(
      traj.turns.map(() => ({ tokenFilter: null, tokenFilterVersion: null, specSha256: sha, maxTokens: 128, reported: false })),
    );
    // unconstrained (the default in these options): no grammar is sent and nothing is recorded
    await server!.close();
    const plain = await setup([FULL[4]!]);
    const t2 = await runEpisode(plain.deps, instance, opts());
    expect(plain.server.requests[0]!.body).not.toHaveProperty('structured_outputs');
    expect(t2.turns[0]!.constraint).toBeUndefined();
  });

  it('a grammar dead end (finish_reason abort) ends the episode as invalid, grammar_dead_end', async () => {
    server = await startScriptedServer((body) => {
      const b = completionBody('STATE:', { promptIds: body.prompt as number[] });
      Object.assign(b.choices[0]!, { finish_reason: 'abort', stop_reason: 'grammar_dead_end' });
      return { body: b };
    });
    const { deps } = {
      deps: {
        policy: new OpenAIPolicyClient({ baseUrl: server.baseUrl, apiKeyEnv: 'GSTEER_TEST_NONE', timeoutMs: 5000, maxRetries: 0 }),
        simulator: new SeedSimulator(encoder, 0.35),
        store: new InMemoryUserStore(encoder),
        tokenizer: tok,
      },
    };
    await deps.store.init([{ userId: 'u1', profile: '', memories: [] }]);
    const o = opts();
    const traj = await runEpisode(deps, instance, { ...o, rollout: { ...o.rollout, constrained: true } });
    expect([traj.termination, traj.invalidReason]).toEqual(['invalid', 'grammar_dead_end']);
  });
});
