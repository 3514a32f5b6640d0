// Must-show (issue 24): hidden information never reaches the policy. Seed answers, seed
// questions, target ids and persona facts of targets the policy never asks about are planted
// as unique canary strings, and episodes run through the LLM simulator path (built from the
// run config, as a run builds it) against a fake vLLM serving Qwen3 that misbehaves: thinking
// that quotes the system prompt, a reply cut inside <think>, a reply that echoes the system
// prompt, schema violations, fences, a reasoning parser, 429 and 5xx. The scripted policy
// copies every user answer it sees into its evidence state (the way a leak would travel into
// memory), and the LLM memory judge (same fake server) keeps every covered slot. No canary may
// appear in any policy prompt, any trajectory (observations and the simulator replies kept for
// the trajectories view) or the user store afterwards.
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../configs/load.ts';
import { IM_END_ID, qwen3Tokenizer } from '../../core/tokenizer.ts';
import type { Trajectory } from '../../core/types.ts';
import { InstanceSchema } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { runEpisode } from '../../rollout/episode.ts';
import { judgeFrom, simulatorFrom } from '../../rollout/from-config.ts';
import type { CompletionRequest, PolicyClient } from '../../rollout/policy-client.ts';
import { updateUserState } from '../../rollout/state-update.ts';
import { InMemoryUserStore } from '../../rollout/user-store-memory.ts';
import { startFakeVllm, type FakeChatRequest, type FakeVllm, type FakeVllmOptions } from '../helpers/fake-vllm.ts';
import type { CallRecord } from '../../endpoints/index.ts';

const CANARIES = ['CANARY-SEED-ANSWER-4481', 'CANARY-SEED-QUESTION-9913', 'canary-target-zq81', 'CANARY-PERSONA-FACT-2207', 'CANARY-DESCRIPTION-5531'];
const instance = InstanceSchema.parse({
  id: 'inst-c',
  userId: 'u-c',
  taskId: 'laptop',
  split: 'train',
  query: 'Which laptop should I buy for my research?',
  persona: ['Works mostly in R', 'Owns a cat named CANARY-PERSONA-FACT-2207'],
  targets: [
    {
      id: 'budget',
      description: 'the spending limit for the laptop',
      seedQuestion: 'What is your budget for the laptop?',
      seedAnswer: 'Under 1200 EUR.',
      weight: 1,
    },
    {
      id: 'canary-target-zq81',
      description: 'CANARY-DESCRIPTION-5531',
      seedQuestion: 'CANARY-SEED-QUESTION-9913',
      seedAnswer: 'CANARY-SEED-ANSWER-4481',
      weight: 1,
    },
  ],
});

const tok = qwen3Tokenizer();
const encoder = new HashedEncoder(256);
const Q_BUDGET = 'What is your budget for the laptop?';
const Q_OTHER = 'Do you prefer a matte or a glossy screen?';

/** The fake model's answers: the simulator answers what it is asked; the judge keeps every covered slot. */
function answer(req: FakeChatRequest): string {
  const last = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  if (req.response_format?.json_schema?.name === 'memory_verdict') {
    const covered = [...last.matchAll(/^- (\S+) \| purpose:/gm)].map((m) => m[1]);
    return JSON.stringify({ keep: covered, profile_sentence: null });
  }
  return last.includes('budget') ? '{"target_id": "budget", "answer": "Under 1200 EUR."}' : '{"target_id": null, "answer": "No preference there."}';
}

const line = (name: string, purpose: string, value: string) =>
  `- ${name} | purpose: ${purpose} | status: ${value ? 'covered' : 'uncovered'} | source: dialogue | value: ${value}`.trimEnd();

/** A policy that asks about the budget, then something no target covers, then stops with what it heard as slot values. */
class CopyingPolicy implements PolicyClient {
  readonly prompts: string[] = [];
  async complete(req: CompletionRequest) {
    const prompt = tok.decode(req.promptIds);
    this.prompts.push(prompt);
    const heard = [...prompt.matchAll(/USER: (.*)$/gm)].map((m) => (m[1] ?? '').replace(/\|/g, '/').trim());
    const state = [line('budget', 'spending limit', heard[0] ?? ''), line('screen', 'screen finish', heard[1] ?? '')];
    const step = this.prompts.length % 3;
    const [action, execute] = step === 1 ? ['ASK', Q_BUDGET] : step === 2 ? ['ASK', Q_OTHER] : ['STOP', `Recommend a laptop; user said: ${heard.join(' / ')}`];
    const text = ['STATE:', ...state, 'PLAN: go on', `ACTION: ${action}`, `EXECUTE: ${execute}`].join('\n');
    const ids = [...tok.encode(text), IM_END_ID];
    return { completionIds: ids, logprobs: ids.map(() => -0.1), text, finishReason: 'stop' as const };
  }
}

let server: FakeVllm | null = null;
afterEach(async () => void (await server?.close()));

async function runEpisodes(fake: FakeVllmOptions, sets: string[], episodes: number) {
  server = await startFakeVllm({ answer, ...fake });
  const cfg = loadConfig([], ['simulator.kind=llm', `simulator.baseUrl=${server.baseUrl}`, 'judge.kind=llm', `judge.baseUrl=${server.baseUrl}`, ...sets]);
  const records: CallRecord[] = [];
  const sink = { record: (r: CallRecord) => void records.push(r) };
  const simulator = simulatorFrom({ ...cfg, simulator: { ...cfg.simulator } }, encoder, sink);
  const judge = judgeFrom(cfg, encoder, sink);
  const store = new InMemoryUserStore(encoder);
  await store.init([{ userId: 'u-c', profile: '', memories: [] }]);
  const policy = new CopyingPolicy();
  const trajectories: Trajectory[] = [];
  for (let e = 0; e < episodes; e++) {
    const t = await runEpisode({ policy, simulator, store, tokenizer: tok }, instance, {
      runId: 'canary',
      groupId: `g${e}`,
      index: 0,
      policyVersion: 0,
      model: 'policy',
      snapshotId: `u-c@${await store.latestVersion('u-c')}`,
      seed: e,
      rollout: { maxTurns: 6, maxTokens: 256, temperature: 0.7, topP: 1, retrieveCandidates: 15, retrieveTopK: 3, constrained: false },
    });
    trajectories.push(t);
    await updateUserState({ store, judge }, instance, [{ trajectory: t, reward: 1 }]);
  }
  return { policy, trajectories, store, records, server };
}

function expectNoCanary(where: string, text: string) {
  for (const c of CANARIES) expect(text.includes(c), `${c} leaked into ${where}`).toBe(false);
}

describe('canaries never reach the policy, a trajectory or memory', () => {
  it('thinking switched off by the config; echo, schema violation, fences, reasoning parser, a cut reply, 429 and 5xx', async () => {
    const {
      policy,
      trajectories,
      store,
      records,
      server: s,
    } = await runEpisodes(
      {
        echoSystemPrompt: { on: [0] },
        violateSchema: { on: [3] },
        fence: { rate: 0.5 },
        truncate: { on: [5], atTokens: 4 },
        rateLimit: { on: [7], retryAfter: '0' },
        serverError: { on: [9] },
        reasoningParser: 'reasoning_content',
        seed: 7,
      },
      [],
      4,
    );
    expect(s.counts.thinking ?? 0).toBe(0); // Qwen3 model: enable_thinking false sent by default
    expect(s.counts.echoed).toBe(1);
    expect(s.counts.truncated).toBe(1);
    expect(s.counts.http_429).toBe(1);
    expect(s.counts.http_500).toBe(1);
    expect(
      records
        .filter((r) => r.status !== 'ok')
        .map((r) => r.status)
        .sort(),
    ).toEqual(['http_429', 'http_500', 'reply_error:echo', 'reply_error:schema', 'reply_error:truncated']);
    check(policy.prompts, trajectories, await store.dump());
    // the episodes did run: the budget answer got through and was remembered
    expect(trajectories[0]!.turns[0]!.observation).toMatchObject({ kind: 'answer', answer: 'Under 1200 EUR.', targetId: 'budget' });
    expect(JSON.stringify(await store.dump())).toContain('Under 1200 EUR.');
  });

  it('a server that thinks anyway (thinking quotes the system prompt): a reply cut inside <think>, an echo, then every attempt cut', async () => {
    // chatTemplateKwargs null: nothing sent, so the fake Qwen3 thinks, as a server behind a
    // gateway that drops the field would; maxRetries 1 so one call fails every attempt
    const {
      policy,
      trajectories,
      store,
      records,
      server: s,
    } = await runEpisodes(
      { truncate: { on: [0, 5, 6], atTokens: 250 }, echoSystemPrompt: { on: [2] } },
      ['simulator.chatTemplateKwargs=null', 'judge.chatTemplateKwargs=null', 'simulator.maxRetries=1'],
      3,
    );
    expect(s.counts.thinking).toBeGreaterThan(0);
    expect(s.counts.truncated_in_think).toBe(3);
    // cut inside <think> at the token limit: refused as truncated (finish_reason "length")
    expect(records.filter((r) => r.status === 'reply_error:truncated')).toHaveLength(3);
    expect(records.filter((r) => r.status === 'reply_error:echo')).toHaveLength(1);
    // the call whose every attempt was cut got the non-committal answer, with the reason on record
    const failed = trajectories.flatMap((t) => t.turns.map((x) => x.observation)).filter((o) => o.kind === 'answer' && o.simulatorError);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed[0]).toMatchObject({ targetId: null, simulatorReply: null, simulatorError: 'reply_error:truncated after 2 attempt(s)' });
    check(policy.prompts, trajectories, await store.dump());
  });
});

function check(prompts: string[], trajectories: Trajectory[], dump: unknown) {
  expect(prompts.length).toBeGreaterThan(0);
  prompts.forEach((p, i) => expectNoCanary(`policy prompt ${i}`, p));
  for (const t of trajectories) {
    t.turns.forEach((turn, i) => expectNoCanary(`trajectory ${t.groupId} observation ${i}`, JSON.stringify(turn.observation)));
    expectNoCanary(`trajectory ${t.groupId}`, JSON.stringify(t));
  }
  expectNoCanary('the user store', JSON.stringify(dump));
}
