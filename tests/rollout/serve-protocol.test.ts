// The policy client and the episode loop against the project's embedded server (serve/)
// over a small real ServeModel: both sides of the wire protocol agree (ids, logprobs,
// prompt ids, finish reasons, seeds).
import { describe, it, expect, afterAll, beforeAll } from 'vitest';
import { startServer, type RunningServer } from '../../serve/server.ts';
import { OpenAIPolicyClient } from '../../rollout/policy-client.ts';
import { runEpisode } from '../../rollout/episode.ts';
import { SeedSimulator } from '../../rollout/simulator-seed.ts';
import { InMemoryUserStore } from '../../rollout/user-store-memory.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { InstanceSchema } from '../../data/schema.ts';
import { buildPolicyMessages } from '../../rollout/prompt.ts';
import { EOS_IDS, encodeChat, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { prefixHashModel } from '../serve/prefix-hash-model.ts';

const tok = qwen3Tokenizer();
let server: RunningServer;
let client: OpenAIPolicyClient;
beforeAll(async () => {
  server = await startServer({ model: prefixHashModel({ maxContext: 4096 }), servedModelName: 'tiny' });
  client = new OpenAIPolicyClient({ baseUrl: `${server.url}/v1`, apiKeyEnv: 'GSTEER_TEST_NONE', timeoutMs: 20_000, maxRetries: 0 });
});
afterAll(async () => {
  await server?.close();
});

const promptIds = encodeChat(tok, buildPolicyMessages({ query: 'Which laptop?', profile: '', state: [], history: [], turn: 1, maxTurns: 3 }));

describe('policy client <-> embedded server', () => {
  it('returns sampled ids with one logprob each, text = the ids decoded, and replays a seed', async () => {
    const req = { promptIds, maxTokens: 24, temperature: 0.7, topP: 0.95, seed: 7, model: 'tiny' };
    const a = await client.complete(req);
    expect(a.completionIds.length).toBe(a.logprobs.length);
    expect(a.completionIds.length).toBeGreaterThan(0);
    expect(a.logprobs.every((x) => Number.isFinite(x) && x <= 0)).toBe(true);
    if (a.finishReason === 'stop') expect(EOS_IDS).toContain(a.completionIds.at(-1));
    else expect(a.completionIds.length).toBe(24);
    expect(a.text).toBe(tok.decode(a.completionIds, { skipSpecialTokens: true }));
    // the replay is the same completion; its prompt now comes from the server's prefix cache
    const again = await client.complete(req);
    expect({ ...again, cachedPromptTokens: 0 }).toEqual(a);
    expect([a.cachedPromptTokens, again.cachedPromptTokens]).toEqual([0, promptIds.length]);
  });

  it('an episode over the server records exactly what was sampled', async () => {
    const encoder = new HashedEncoder(128);
    const instance = InstanceSchema.parse({ id: 'i', userId: 'u', taskId: 't', split: 'train', query: 'Which laptop?', targets: [] });
    const deps = { policy: client, simulator: new SeedSimulator(encoder, 0.35), store: new InMemoryUserStore(encoder), tokenizer: tok };
    await client.complete({ promptIds, maxTokens: 1, temperature: 0, topP: 1, model: 'tiny' }); // the first-turn prompt is now in the server's prefix cache
    const traj = await runEpisode(deps, instance, {
      runId: 'r',
      groupId: 'g',
      index: 0,
      policyVersion: 0,
      model: 'tiny',
      snapshotId: 'u@0',
      seed: 1,
      rollout: { maxTurns: 3, maxTokens: 24, temperature: 0.7, topP: 0.95, retrieveCandidates: 15, retrieveTopK: 3 },
    });
    // a random model does not speak the grammar: the first turn is invalid
    expect(traj.termination).toBe('invalid');
    expect(traj.turns).toHaveLength(1);
    const t = traj.turns[0]!;
    expect(t.tokens.promptIds).toEqual(promptIds);
    expect(t.tokens.completionIds.length).toBe(t.tokens.logprobs.length);
    expect(t.completionText).toBe(tok.decode(t.tokens.completionIds, { skipSpecialTokens: true }));
    // the server says it served the first-turn prompt from its prefix cache
    expect(t.tokens.cachedPromptTokens).toBe(promptIds.length);
  });
});
