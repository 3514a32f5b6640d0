// The user simulator as the paper describes it (method §3.5, paper "User Simulator"): it gets the
// task-relevant persona facts only (a built instance carries those: data/build/task-facts.ts),
// and a late-activatable target opens once a parent is covered, in the dialogue or from a memory
// the policy retrieved: the rule the SFT walk follows (data/ieg.ts isActive, method §7.4).
import { afterEach, describe, expect, it } from 'vitest';
import { buildDataset } from '../../data/build/pipeline.ts';
import { placementsFor, readRaw } from '../../data/build/run.ts';
import { userFacts } from '../../data/build/rules.ts';
import { ruleSteps } from '../../data/build/steps.ts';
import { isActive } from '../../data/ieg.ts';
import { InstanceSchema } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { runEpisode } from '../../rollout/episode.ts';
import { OpenAIPolicyClient } from '../../rollout/policy-client.ts';
import { simulatorMessages } from '../../rollout/simulator-llm.ts';
import { SeedSimulator } from '../../rollout/simulator-seed.ts';
import { activeTargets, LateActivation, NON_COMMITTAL } from '../../rollout/simulator.ts';
import { InMemoryUserStore } from '../../rollout/user-store-memory.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { completionBody, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';
import { join } from 'node:path';

const encoder = new HashedEncoder(512);

describe('task-relevant facts', () => {
  it("the simulator's prompt holds the user's facts for this task, not those of the user's other tasks", async () => {
    const ds = readRaw(join(import.meta.dirname, '..', 'fixtures', 'grounding'));
    const built = await buildDataset(ds, placementsFor(ds, { seed: 1 }), ruleSteps);
    const inst = built.instances.find((i) => i.id === 'raj-wellbeing')!; // "What lifestyle changes would improve my health?"
    const all = userFacts(ds.pairs.find((p) => p.id === 'raj-wellbeing')!);
    const prompt = simulatorMessages('How is your health?', inst)[0]!.content;
    expect(all).toContain('heating: gas combi boiler, 14 years old'); // the user's fact for the home-energy task
    expect(prompt).not.toContain('gas combi boiler');
    expect(prompt).not.toContain("teachers' pension"); // ... and for the savings task
    expect(prompt).toContain('health: type 2 diabetes, managed with metformin');
    expect((inst.persona as string[]).length).toBeLessThan(all.length);
  });
});

const instance = InstanceSchema.parse({
  id: 'inst-1',
  userId: 'u1',
  taskId: 'laptop',
  split: 'train',
  query: 'Which laptop should I buy for my research?',
  profile: '',
  targets: [
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
// A memory that covers the parent "travel" (cosine >= 0.55 under the hashed encoder, checked below).
const travelMemory = { name: 'travel', purpose: 'how often the user travels with the laptop', value: 'flies to conferences abroad twice a year' };
const Q_ADAPTER = 'Which countries do you travel to, for power adapters?';

describe('late activation: after a parent is covered in the dialogue or from memory', () => {
  it('a retrieved memory covering the parent activates the child, as the SFT walk does (data/ieg.ts isActive)', async () => {
    const act = new LateActivation(encoder, 0.55);
    expect(activeTargets(instance).map((t) => t.id)).toEqual(['travel']);
    const covered = await act.fromMemory(instance, { turns: [], memory: [travelMemory] });
    expect([...covered]).toEqual(['travel']);
    expect((await act.active(instance, { turns: [], memory: [travelMemory] })).map((t) => t.id)).toEqual(['travel', 'adapter']);
    expect(isActive(instance, 'adapter', covered)).toBe(true); // the walk's rule, same covered set
    // a memory about something else activates nothing
    expect([...(await act.fromMemory(instance, { turns: [], memory: [{ name: 'diet', purpose: 'dietary needs', value: 'vegan' }] }))]).toEqual([]);
    const sim = new SeedSimulator(encoder, 0.35);
    expect(await sim.answer(Q_ADAPTER, instance, { turns: [] })).toEqual({ answer: NON_COMMITTAL, targetId: null });
    expect(await sim.answer(Q_ADAPTER, instance, { turns: [], memory: [travelMemory] })).toEqual({ answer: 'Mostly the UK and the US.', targetId: 'adapter' });
  });

  let server: ScriptedServer | null = null;
  afterEach(async () => void (await server?.close()));

  it('in an episode: Retrieve finds the parent in memory, then the late question is answered', async () => {
    const script = [
      'STATE:\n- travel | purpose: travel with the laptop | status: uncovered | source: memory | value:\nPLAN: check memory\nACTION: RETRIEVE\nEXECUTE: how often the user travels with the laptop',
      `STATE:\n- travel | purpose: travel with the laptop | status: covered | source: memory | value: abroad twice a year\nPLAN: adapters next\nACTION: ASK\nEXECUTE: ${Q_ADAPTER}`,
      'STATE:\nPLAN: done\nACTION: STOP\nEXECUTE: A laptop for travel to the UK and the US.',
    ];
    server = await startScriptedServer((body, n) => ({
      body: completionBody(script[n]!, { promptIds: body.prompt as number[], finish: 'stop', logprob: () => -0.1 }),
    }));
    const store = new InMemoryUserStore(encoder);
    await store.init([{ userId: 'u1', profile: '', memories: [{ ...travelMemory, sourceInstance: 'old-1' }] }]);
    const deps = {
      policy: new OpenAIPolicyClient({ baseUrl: server.baseUrl, apiKeyEnv: 'GSTEER_TEST_NONE', timeoutMs: 5000, maxRetries: 0 }),
      simulator: new SeedSimulator(encoder, 0.35),
      store,
      tokenizer: qwen3Tokenizer(),
    };
    const traj = await runEpisode(deps, instance, {
      runId: 'r',
      groupId: 'g',
      index: 0,
      policyVersion: 0,
      model: 'm',
      snapshotId: 'u1@1',
      seed: 1,
      rollout: { maxTurns: 4, maxTokens: 128, temperature: 0.7, topP: 0.95, retrieveCandidates: 15, retrieveTopK: 3 },
    });
    expect(traj.turns[0]!.observation).toMatchObject({ kind: 'memory', results: [{ name: 'travel' }] });
    expect(traj.turns[1]!.observation).toMatchObject({ kind: 'answer', answer: 'Mostly the UK and the US.', targetId: 'adapter' });
  });
});
