// User simulators (SPEC §3): the embedded seed-grounded one and the LLM-backed one (against a
// scripted chat server).
import { describe, it, expect, afterEach } from 'vitest';
import { InstanceSchema } from '../../data/schema.ts';
import { HashedEncoder } from '../../reward/encoders/hashed.ts';
import { cosine } from '../../reward/encoder.ts';
import { SeedSimulator, targetMatchText } from '../../rollout/simulator-seed.ts';
import { LlmSimulator, simulatorMessages } from '../../rollout/simulator-llm.ts';
import { activeTargets, NON_COMMITTAL } from '../../rollout/simulator.ts';
import { chatBody, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

const encoder = new HashedEncoder(512);
const instance = InstanceSchema.parse({
  id: 'inst-1', userId: 'u1', taskId: 'laptop', split: 'train', query: 'Which laptop should I buy for my research?',
  persona: ['Flies to conferences abroad twice a year', 'Works mostly in R'],
  targets: [
    { id: 'budget', description: 'the spending limit for the laptop', seedQuestion: 'What is your budget for the laptop?', seedAnswer: 'Under 1200 EUR.', weight: 1 },
    { id: 'travel', description: 'how often the user travels with the laptop', seedQuestion: 'Will you travel with the laptop?', seedAnswer: 'Yes, twice a year.', weight: 1 },
    { id: 'adapter', description: 'power adapters for the countries visited', seedQuestion: 'Which countries do you travel to?', seedAnswer: 'The UK and the US.', weight: 0.5, lateActivatable: true },
  ],
  edges: [['travel', 'adapter']],
});

let server: ScriptedServer | null = null;
afterEach(async () => { await server?.close(); server = null; });

describe('SeedSimulator', () => {
  const sim = new SeedSimulator(encoder, 0.35);
  it('answers with the best target\'s seed answer when it clears the threshold', async () => {
    expect(await sim.answer('What budget do you have for the laptop?', instance)).toEqual({ answer: 'Under 1200 EUR.', targetId: 'budget' });
  });
  it('is non-committal below the threshold, and the threshold is the cosine of the best target', async () => {
    const q = 'What is your favourite colour?';
    const [qv, ...tv] = await encoder.embed([q, ...instance.targets.map(targetMatchText)]);
    const best = Math.max(...tv.map((v) => cosine(qv!, v)));
    expect(await new SeedSimulator(encoder, best + 1e-6).answer(q, instance)).toEqual({ answer: NON_COMMITTAL, targetId: null });
    expect((await new SeedSimulator(encoder, best - 1e-6).answer(q, instance)).targetId).not.toBeNull();
  });
  it('keeps a late-activatable target inactive until its parent was answered', async () => {
    const q = 'Which countries do you travel to?';
    expect(activeTargets(instance).map((t) => t.id)).toEqual(['budget', 'travel']);
    const before = await sim.answer(q, instance);
    expect(before.targetId).not.toBe('adapter');
    const dialogue = { turns: [{ question: 'Will you travel?', answer: 'Yes, twice a year.', targetId: 'travel' }] };
    expect(await sim.answer(q, instance, dialogue)).toEqual({ answer: 'The UK and the US.', targetId: 'adapter' });
  });
  it('is non-committal for an empty question or an instance without targets', async () => {
    expect(await sim.answer('  ', instance)).toEqual({ answer: NON_COMMITTAL, targetId: null });
    expect(await sim.answer('Budget?', { ...instance, id: 'no-targets', targets: [] })).toEqual({ answer: NON_COMMITTAL, targetId: null });
  });
});

describe('LlmSimulator', () => {
  const make = (baseUrl: string, log: string[]) =>
    new LlmSimulator({ baseUrl, apiKeyEnv: 'GSTEER_TEST_SIM_KEY', timeoutMs: 5000, maxRetries: 1, retryBaseMs: 5, model: 'Qwen/Qwen3-32B', temperature: 0.7, log: (m) => log.push(m) });

  it('sends persona, active targets with seed Q/A, the dialogue so far, and parses the JSON reply', async () => {
    server = await startScriptedServer(() => ({ body: chatBody('<think>budget it is</think>{"target_id": "budget", "answer": "Under 1200 EUR, ideally less."}') }));
    const log: string[] = [];
    const dialogue = { turns: [{ question: 'Will you travel?', answer: 'Yes, twice a year.', targetId: 'travel' }] };
    const out = await make(server.baseUrl, log).answer('What is your budget?', instance, dialogue);
    expect(out).toEqual({ answer: 'Under 1200 EUR, ideally less.', targetId: 'budget' });
    expect(log).toEqual([]);
    const body = server.requests[0]!.body;
    expect(server.requests[0]!.path).toBe('/v1/chat/completions');
    expect(body).toMatchObject({ model: 'Qwen/Qwen3-32B', temperature: 0.7 });
    expect(body.messages).toEqual(simulatorMessages('What is your budget?', instance, dialogue));
    const system = (body.messages as { content: string }[])[0]!.content;
    for (const s of ['Flies to conferences abroad twice a year', 'seed question: What is your budget for the laptop?', 'seed answer: Yes, twice a year.', 'id: adapter', 'never invent'])
      expect(system).toContain(s);
    // without the travel answer, the late target is not shown at all
    expect(simulatorMessages('q', instance)[0]!.content).not.toContain('id: adapter');
  });

  it('uses a malformed reply as plain text (logged) and nulls unknown target ids', async () => {
    const replies = ['I guess under 1200 EUR.', '{"target_id": "adapter", "answer": "The UK."}', '{"target_id": null, "answer": ""}'];
    server = await startScriptedServer((_b, n) => ({ body: chatBody(replies[n] ?? '') }));
    const log: string[] = [];
    const sim = make(server.baseUrl, log);
    expect(await sim.answer('Budget?', instance)).toEqual({ answer: 'I guess under 1200 EUR.', targetId: null });
    expect(await sim.answer('Countries?', instance)).toEqual({ answer: 'The UK.', targetId: null }); // adapter inactive
    expect(await sim.answer('Colour?', instance)).toEqual({ answer: NON_COMMITTAL, targetId: null });
    expect(log).toHaveLength(2);
    expect(log[0]).toContain('not the JSON asked for');
    expect(log[1]).toContain('target_id "adapter" is not an active target of instance inst-1');
  });
});
