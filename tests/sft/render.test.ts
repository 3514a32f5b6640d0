// The LLM teacher writes Plan (every turn) and Execute (Retrieve query, Ask question) of SFT
// trajectories (data/sft/render.ts), through a real HTTP endpoint (the fake vLLM); slot
// names stay the canonical ones; an Ask with two questions is refused and repaired.
import { afterAll, describe, expect, it } from 'vitest';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { OfflineMemory } from '../../data/sft/memory.ts';
import { buildInstance } from '../../data/sft/build.ts';
import { llmTeacher } from '../../data/sft/teacher.ts';
import { createEndpoint } from '../../endpoints/index.ts';
import type { Instance } from '../../data/schema.ts';
import { startFakeVllm, type FakeChatRequest, type FakeVllm } from '../helpers/fake-vllm.ts';

const user = (req: FakeChatRequest) => req.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
const first = (req: FakeChatRequest) => req.messages.find((m) => m.role === 'user')?.content ?? '';

describe('teacher-rendered SFT turns', () => {
  let fake: FakeVllm;
  afterAll(() => fake?.close());

  it('Plan and Execute come from the teacher; the memory is searched with its query; the asked question is its question', async () => {
    const twice = new Set<string>();
    fake = await startFakeVllm({
      answer: (req) => {
        if (req.response_format?.json_schema?.name !== 'gsteer_sft_turn') return 'Refined: plan the trip within the budget.';
        const prompt = first(req);
        const action = /Action: (\w+)/.exec(prompt)?.[1];
        const slot = /Slots it acts on:\n- (\w+)/.exec(prompt)?.[1] ?? 'none';
        if (action === 'ASK' && !twice.has(prompt)) {
          twice.add(prompt); // first answer asks two questions: refused, the error goes back to the model
          return JSON.stringify({ plan: 'T-PLAN ask', execute: `What about ${slot}? And more?` });
        }
        return JSON.stringify({
          plan: `T-PLAN ${action} ${slot}`,
          execute: action === 'ASK' ? `What is your ${slot}?` : action === 'RETRIEVE' ? `memories about ${slot}` : '',
        });
      },
    });
    const t = (id: string, essential: boolean, name: string) => ({
      id,
      description: `about ${id}`,
      seedQuestion: `${id}?`,
      seedAnswer: `my ${id} answer`,
      weight: 1,
      essential,
      lateActivatable: false,
      slot: { name, purpose: `the ${name}` },
    });
    const inst: Instance = {
      id: 'i',
      userId: 'u',
      taskId: 'k',
      split: 'train',
      query: 'Plan a trip.',
      profile: '',
      persona: [],
      targets: [t('c1', true, 'trip_budget'), t('c2', false, 'travel_dates')],
      edges: [],
      offlineProfile: 'From earlier requests: vegan.',
    };
    const memory = await OfflineMemory.build([inst], new HashedEncoder(64));
    const teacher = llmTeacher({
      endpoint: createEndpoint({
        role: 'teacher',
        baseUrl: fake.baseUrl,
        model: 'Qwen/Qwen3-32B',
        timeoutMs: 60_000,
        maxRetries: 2,
        concurrency: 2,
        chatTemplateKwargs: { enable_thinking: false },
        retry: { baseDelayMs: 1 },
      }),
      maxTokens: 512,
    });
    const built = await buildInstance(inst, {
      seed: 1,
      optionalRatios: [1],
      ordersPerSubgraph: 1,
      maxTurns: 12,
      topK: 3,
      memory,
      teacher,
      kinds: ['dialogue', 'memory_all'],
    });
    const dialogue = built.find((x) => x.scenario.kind === 'dialogue');
    const steps = dialogue!.steps;
    expect(steps.map((s) => s.turn.action)).toEqual(['RETRIEVE', 'ASK', 'ASK', 'STOP']);
    const [ret, ask1, ask2, stop] = steps as [(typeof steps)[0], (typeof steps)[0], (typeof steps)[0], (typeof steps)[0]];
    expect(ret.turn.plan).toBe('T-PLAN RETRIEVE trip_budget');
    expect(ret.turn.execute).toBe('memories about trip_budget');
    expect(ret.observation).toMatchObject({ kind: 'memory', query: 'memories about trip_budget' });
    expect(ask1.turn.execute).toBe('What is your trip_budget?');
    expect(ask1.observation).toMatchObject({ kind: 'answer', question: 'What is your trip_budget?', answer: 'my c1 answer' });
    expect(ask2.turn.execute).toBe('What is your travel_dates?');
    expect(stop.turn.plan).toBe('T-PLAN STOP none');
    expect(stop.turn.execute).toBe('Refined: plan the trip within the budget.');
    // canonical slot names in every state; the teacher saw the offline profile and the template draft
    expect(new Set(steps.flatMap((s) => s.turn.state.map((x) => x.name)))).toEqual(new Set(['trip_budget', 'travel_dates']));
    const turnReqs = fake.requests.filter(
      (r) => (r.body.response_format as { json_schema?: { name: string } } | undefined)?.json_schema?.name === 'gsteer_sft_turn',
    );
    expect(first(turnReqs[0]!.body as never)).toContain('Profile: From earlier requests: vegan.');
    expect(first(turnReqs[0]!.body as never)).toMatch(/Template draft: PLAN: new request; factors to ground: trip_budget, travel_dates/);
    // each Ask was first answered with two questions, refused, and repaired with the error fed back
    const repaired = turnReqs.filter((r) => /one question/.test(user(r.body as never)));
    expect(repaired).toHaveLength(2);
    // both trajectories open with the same Retrieve turn: its prompt was sent once
    const opening = first(turnReqs[0]!.body as never);
    expect(built.every((x) => x.steps[0]!.turn.plan === 'T-PLAN RETRIEVE trip_budget')).toBe(true);
    expect(turnReqs.filter((r) => first(r.body as never) === opening)).toHaveLength(1);
  });
});
