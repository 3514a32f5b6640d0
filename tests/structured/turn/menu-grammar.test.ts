// A prompting baseline's own turn grammar (structured/turn/menu-grammar.ts; method §8.5):
//   1. with xgrammar deciding acceptance, over fuzzed turns: the menu grammar accepts a turn
//      iff its STATE is empty and its action is on the menu, and what it accepts parseTurn
//      reads as exactly that turn (so it is a sub-language of the policy grammar);
//   2. end to end over seeds: gsteer serve samples episodes of a tiny random model under each
//      baseline's grammar (sent by runEpisode from the menu): no turn takes an action outside
//      the menu; the same model under the policy grammar does, with the same seeds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POLICY_GRAMMAR } from '../../../structured/turn/grammar-ebnf.ts';
import { ACTIONS, parseTurn, renderTurn } from '../../../structured/turn/grammar.ts';
import { menuGrammarEbnf } from '../../../structured/turn/menu-grammar.ts';
import type { ActionKind, Trajectory } from '../../../core/types.ts';
import { qwen3Tokenizer } from '../../../core/tokenizer.ts';
import { InstanceSchema } from '../../../data/schema.ts';
import { BASELINES } from '../../../eval/baselines.ts';
import { baseKeptIds, initModel, PRESETS } from '../../../model/init.ts';
import { HashedEncoder } from '../../../encoders/hashed.ts';
import { runEpisode } from '../../../rollout/episode.ts';
import { OpenAIPolicyClient } from '../../../rollout/policy-client.ts';
import { baselineSystemPrompt, SYSTEM_PROMPT } from '../../../rollout/prompt.ts';
import { SeedSimulator } from '../../../rollout/simulator-seed.ts';
import { InMemoryUserStore } from '../../../rollout/user-store-memory.ts';
import { startServer, type RunningServer } from '../../../serve/server.ts';
import { ebnfAcceptor } from '../accept.ts';

// one entry per distinct menu (the trained clarifier shares clarify's Ask/Stop menu)
const MENUS: [string, readonly ActionKind[]][] = Object.entries(BASELINES)
  .flatMap(([name, b]) => ('actions' in b ? [[name, b.actions as readonly ActionKind[]] as [string, readonly ActionKind[]]] : []))
  .filter(([, m], i, all) => all.findIndex(([, x]) => x.join() === m.join()) === i);

describe('menu grammars against parseTurn (xgrammar acceptance, fuzzed turns)', () => {
  const field = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => /^[^\n \t\v\f\r]/.test(s) && !s.includes('\n'));
  const slot = fc.record({
    name: fc.constantFrom('budget', 'use'),
    purpose: fc.constant('why'),
    status: fc.constant('uncovered' as const),
    source: fc.constant('dialogue' as const),
    value: fc.constant(''),
  });
  const turn = fc.record({ state: fc.array(slot, { maxLength: 1 }), plan: field, action: fc.constantFrom(...ACTIONS), execute: field });

  for (const [name, menu] of MENUS) {
    it(`${name} (${menu.join('/')}): accepted iff empty STATE and a menu action; accepted turns parse to a menu action`, async () => {
      const accepts = await ebnfAcceptor(menuGrammarEbnf(menu));
      const policy = await ebnfAcceptor(POLICY_GRAMMAR);
      fc.assert(
        fc.property(turn, (t) => {
          const text = renderTurn(t);
          const ok = accepts(text);
          expect(ok).toBe(t.state.length === 0 && menu.includes(t.action));
          if (ok) {
            expect(policy(text)).toBe(true);
            const p = parseTurn(text);
            expect(p.ok && menu.includes(p.turn.action) && p.turn.state.length === 0).toBe(true);
          }
        }),
        { seed: 21, numRuns: 300 },
      );
    });
  }
});

const instance = InstanceSchema.parse({
  id: 'i',
  userId: 'u',
  taskId: 't',
  split: 'test',
  query: 'Which laptop should I buy for my research?',
  profile: 'PhD student.',
  targets: [
    { id: 'budget', description: 'the spending limit', seedQuestion: 'What is your budget?', seedAnswer: 'Under 1200 EUR.', weight: 1, essential: true },
  ],
});

let root: string;
let server: RunningServer;
const SEEDS = [1, 2, 3, 4];

async function episodes(actions: readonly ActionKind[] | undefined): Promise<Trajectory[]> {
  const encoder = new HashedEncoder(64);
  const store = new InMemoryUserStore(encoder);
  await store.init([{ userId: 'u', profile: '', memories: [] }]);
  const deps = {
    policy: new OpenAIPolicyClient({ baseUrl: `${server.url}/v1`, apiKeyEnv: 'GSTEER_TEST_NONE', timeoutMs: 120_000, maxRetries: 0 }),
    simulator: new SeedSimulator(encoder, 0.35),
    store,
    tokenizer: qwen3Tokenizer(),
  };
  const rollout = { maxTurns: 2, maxTokens: 64, temperature: 1, topP: 1, retrieveCandidates: 15, retrieveTopK: 3, constrained: true };
  const out: Trajectory[] = [];
  for (const seed of SEEDS)
    out.push(
      await runEpisode(deps, instance, {
        runId: 'r',
        groupId: 'g',
        index: 0,
        policyVersion: 0,
        model: 'base',
        snapshotId: 'u@0',
        seed,
        rollout,
        ...(actions ? { actions } : {}),
      }),
    );
  return out;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'gsteer-menu-'));
  const dir = join(root, 'tiny');
  const prompts = [SYSTEM_PROMPT, ...MENUS.map(([, m]) => baselineSystemPrompt(m))].join('\n');
  const words = qwen3Tokenizer().encode(`${prompts}\n${instance.query} ${instance.profile} QUERY PROFILE TURN HISTORY (nothing yet) (no slots yet)`);
  initModel(dir, { ...PRESETS.tiny!, maxPositionEmbeddings: 2048 }, { seed: 5, keptIds: [...baseKeptIds(), ...words] });
  server = await startServer({ modelDir: dir, servedModelName: 'base', backend: 'cpu' });
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('episodes under a baseline grammar (gsteer serve, tiny random model, seeds 1..4)', () => {
  it('the policy grammar lets the same model take actions a smaller menu lacks (the property below can fail)', async () => {
    const actions = (await episodes(undefined)).flatMap((t) => t.turns.flatMap((x) => (x.parsed.ok ? [x.parsed.turn.action] : [])));
    expect(actions.some((a) => a !== 'STOP')).toBe(true);
  }, 300_000);

  for (const [name, menu] of MENUS) {
    it(`${name}: every turn is sampled under its grammar and no action is outside ${menu.join('/')}`, async () => {
      const trajs = await episodes(menu);
      const turns = trajs.flatMap((t) => t.turns);
      expect(turns.length).toBeGreaterThanOrEqual(SEEDS.length);
      for (const t of turns) {
        expect(t.constraint).toMatchObject({ tokenFilter: 'policy_turn', reported: true });
        expect(t.parsed.ok ? null : t.parsed.reason).not.toBe('unknown_action');
        if (t.parsed.ok) expect(menu).toContain(t.parsed.turn.action);
      }
      expect(turns.filter((t) => t.parsed.ok).length).toBeGreaterThan(0);
    }, 300_000);
  }
});
