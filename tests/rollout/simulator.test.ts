// User simulators (method §3): the embedded seed-grounded one and the LLM-backed one (against a
// scripted chat server).
import { describe, it, expect, afterEach } from 'vitest';
import { personaLines } from '../../data/persona.ts';
import { InstanceSchema } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { cosine } from '../../core/encoder.ts';
import { SeedSimulator, targetMatchText } from '../../rollout/simulator-seed.ts';
import { LlmSimulator, simulatorMessages } from '../../rollout/simulator-llm.ts';
import { activeTargets, NON_COMMITTAL } from '../../rollout/simulator.ts';
import { chatBody, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';
import { createEndpoint } from '../../endpoints/index.ts';
import { options, recordingDeps } from '../endpoints/helpers.ts';

const encoder = new HashedEncoder(512);
const instance = InstanceSchema.parse({
  id: 'inst-1',
  userId: 'u1',
  taskId: 'laptop',
  split: 'train',
  query: 'Which laptop should I buy for my research?',
  persona: ['Flies to conferences abroad twice a year', 'Works mostly in R'],
  targets: [
    {
      id: 'budget',
      description: 'the spending limit for the laptop',
      seedQuestion: 'What is your budget for the laptop?',
      seedAnswer: 'Under 1200 EUR.',
      weight: 1,
    },
    {
      id: 'travel',
      description: 'how often the user travels with the laptop',
      seedQuestion: 'Will you travel with the laptop?',
      seedAnswer: 'Yes, twice a year.',
      weight: 1,
    },
    {
      id: 'adapter',
      description: 'power adapters for the countries visited',
      seedQuestion: 'Which countries do you travel to?',
      seedAnswer: 'The UK and the US.',
      weight: 0.5,
      lateActivatable: true,
    },
  ],
  edges: [['travel', 'adapter']],
});

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

describe('SeedSimulator', () => {
  const sim = new SeedSimulator(encoder, 0.35);
  it("answers with the best target's seed answer when it clears the threshold", async () => {
    expect(await sim.answer('What budget do you have for the laptop?', instance)).toEqual({ answer: 'Under 1200 EUR.', targetId: 'budget' });
  });
  it('is non-committal below the threshold, and the threshold is the cosine of the best target', async () => {
    const q = 'What is your favourite colour?';
    const [qv, ...tv] = await encoder.embed([q, ...instance.targets.map(targetMatchText)]);
    const best = Math.max(...tv.map((v) => cosine(qv!, v)));
    // no persona fact is as close as that (else it would answer at best + 1e-6)
    const fv = await encoder.embed(personaLines(instance.persona));
    expect(Math.max(...fv.map((v) => cosine(qv!, v)))).toBeLessThan(best);
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

// The three persona forms (data/persona.ts) on the same targets; each simulator renders them
// through personaLines (object: `key: value` lines, lists joined with ", ", booleans yes/no).
// (ids differ per form: SeedSimulator caches vectors by instance id)
const withPersona = (persona: unknown) => InstanceSchema.parse({ ...instance, id: `inst-${JSON.stringify(persona)}`, persona });
const FORMS = {
  text: {
    persona: 'Works mostly in R.\nFlies to conferences abroad twice a year.',
    lines: ['Works mostly in R.', 'Flies to conferences abroad twice a year.'],
  },
  list: {
    persona: ['Works mostly in R', 'Flies to conferences abroad twice a year'],
    lines: ['Works mostly in R', 'Flies to conferences abroad twice a year'],
  },
  object: { persona: { languages: ['Danish', 'English'], 'works in R': true, age: 67 }, lines: ['languages: Danish, English', 'works in R: yes', 'age: 67'] },
};

describe('persona forms', () => {
  const sim = new SeedSimulator(encoder, 0.35);
  it('the embedded simulator answers from one rendered persona fact when no target clears the threshold', async () => {
    const cases: [keyof typeof FORMS, string, string][] = [
      ['text', 'Do you work mostly in R?', 'Works mostly in R.'],
      ['list', 'How often do you fly to conferences abroad?', 'Flies to conferences abroad twice a year'],
      ['object', 'Which languages do you speak, Danish or English?', 'languages: Danish, English'],
      ['object', 'Do you work in R?', 'works in R: yes'],
    ];
    for (const [form, q, fact] of cases) {
      const inst = withPersona(FORMS[form].persona);
      const [qv, ...tv] = await encoder.embed([q, ...inst.targets.map(targetMatchText)]);
      expect(Math.max(...tv.map((v) => cosine(qv!, v))), `${form}: ${q}`).toBeLessThan(0.35); // no target would answer
      expect(await sim.answer(q, inst), `${form}: ${q}`).toEqual({ answer: fact, targetId: null });
    }
  });
  it('a target that clears the threshold still wins over the persona, and an unrelated question stays non-committal', async () => {
    for (const form of Object.values(FORMS)) {
      const inst = withPersona(form.persona);
      expect(await sim.answer('What budget do you have for the laptop?', inst)).toEqual({ answer: 'Under 1200 EUR.', targetId: 'budget' });
      expect(await sim.answer('What is your favourite colour?', inst)).toEqual({ answer: NON_COMMITTAL, targetId: null });
    }
  });
  it('the LLM simulator prompt lists the same rendered facts', () => {
    for (const form of Object.values(FORMS)) {
      const system = simulatorMessages('q', withPersona(form.persona))[0]!.content;
      expect(system).toContain(`Facts about you:\n${form.lines.map((l) => `- ${l}`).join('\n')}\nWhat you can speak to`);
    }
    expect(simulatorMessages('q', withPersona({}))[0]!.content).toContain('Facts about you:\n- (no further facts)\nWhat you can speak to');
  });
});

describe('LlmSimulator', () => {
  const make = (baseUrl: string, log: string[], maxRetries = 1) =>
    new LlmSimulator({
      endpoint: createEndpoint(
        options(baseUrl, { role: 'simulator', apiKeyEnv: 'GSTEER_TEST_SIM_KEY', maxRetries, chatTemplateKwargs: { enable_thinking: false } }),
        recordingDeps(),
      ),
      temperature: 0.7,
      topP: 1,
      maxTokens: 768,
      log: (m) => log.push(m),
    });

  it('sends persona, active targets with seed Q/A, the dialogue so far, under the answer schema, and reads the JSON reply', async () => {
    server = await startScriptedServer(() => ({
      body: chatBody('<think>budget it is</think>{"target_id": "budget", "answer": "Under 1200 EUR, ideally less."}'),
    }));
    const log: string[] = [];
    const dialogue = { turns: [{ question: 'Will you travel?', answer: 'Yes, twice a year.', targetId: 'travel' }] };
    const out = await make(server.baseUrl, log).answer('What is your budget?', instance, dialogue);
    expect(out).toEqual({
      answer: 'Under 1200 EUR, ideally less.',
      targetId: 'budget',
      reply: '{"target_id": "budget", "answer": "Under 1200 EUR, ideally less."}',
    });
    expect(log).toEqual([]);
    const body = server.requests[0]!.body;
    expect(server.requests[0]!.path).toBe('/v1/chat/completions');
    // paper, "User Simulator": temperature 0.7, top-p 1.0, 768 tokens; Qwen3 thinking off
    expect(body).toMatchObject({ model: 'Qwen/Qwen3-32B', temperature: 0.7, top_p: 1, max_tokens: 768, chat_template_kwargs: { enable_thinking: false } });
    const format = body.response_format as { type: string; json_schema: { schema: { properties: { target_id: unknown } } } };
    expect(format.type).toBe('json_schema');
    expect(JSON.stringify(format.json_schema.schema.properties.target_id)).toContain('"budget","travel","adapter"');
    expect(body.messages).toEqual(simulatorMessages('What is your budget?', instance, dialogue));
    const system = (body.messages as { content: string }[])[0]!.content;
    for (const s of [
      'Flies to conferences abroad twice a year',
      'seed question: What is your budget for the laptop?',
      'seed answer: Yes, twice a year.',
      'id: adapter',
      'never invent',
    ])
      expect(system).toContain(s);
    // without the travel answer, the late target is not shown at all
    expect(simulatorMessages('q', instance)[0]!.content).not.toContain('id: adapter');
  });

  it('retries a refused reply (prose, an inactive target id) and answers non-committally when every attempt is refused', async () => {
    const replies = [
      'I guess under 1200 EUR.',
      '{"target_id": "budget", "answer": "Under 1200 EUR."}',
      '{"target_id": "adapter", "answer": "The UK."}',
      '{"target_id": "adapter", "answer": "The UK."}',
      '{"target_id": null, "answer": ""}',
    ];
    server = await startScriptedServer((_b, n) => ({ body: chatBody(replies[n] ?? '') }));
    const log: string[] = [];
    const sim = make(server.baseUrl, log);
    expect((await sim.answer('Budget?', instance)).answer).toBe('Under 1200 EUR.'); // prose refused, the retry accepted
    expect(await sim.answer('Countries?', instance)).toEqual({
      answer: NON_COMMITTAL,
      targetId: null,
      reply: null,
      replyError: 'reply_error:schema after 2 attempt(s)',
    }); // adapter inactive
    expect(await sim.answer('Colour?', instance)).toEqual({ answer: NON_COMMITTAL, targetId: null, reply: '{"target_id": null, "answer": ""}' });
    expect(log).toHaveLength(1);
    expect(log[0]).toContain('no acceptable reply for instance inst-1');
    expect(log[0]).not.toContain('The UK'); // the reply is never quoted
  });
});
