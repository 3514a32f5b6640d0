// The synthetic episode (workers/parts.ts RolloutPart): turns against the synthetic policy
// server through the real policy client, each turn's completion sampled by the job's
// adapter (`job.model`). By default one STOP turn of TOY_LEN tokens, as the orchestration
// tests have always used. For fleet simulations (bench/fleet/) an episode has 1..maxTurns
// turns (drawn from its seed), tokensPerTurn tokens each, and between turns a call to a
// chat endpoint standing for the user simulator (endpoints/: its timeouts, retries, 429
// handling and call records); its reply's characters extend the next prompt. Knobs from the
// environment (tests and benches only): GSTEER_SYNTHETIC_TURNS, GSTEER_SYNTHETIC_TOKENS,
// GSTEER_SYNTHETIC_SIMULATOR_URL.
import type { RunConfig } from '../../configs/schema.ts';
import { endpointOptions } from '../../configs/endpoints.ts';
import type { Instance } from '../../data/schema.ts';
import { parseTurn } from '../../structured/turn/grammar.ts';
import type { Trajectory, TurnRecord } from '../../core/types.ts';
import { createEndpoint, withCallGroup, type CallSink, type Endpoint } from '../../endpoints/index.ts';
import { OpenAIPolicyClient, policyEndpoint } from '../../rollout/policy-client.ts';
import { Rng } from '../../util/rng.ts';
import type { RolloutPart } from '../parts.ts';
import { TOY_LEN } from './toy-policy.ts';

export interface SyntheticEpisodeOptions {
  /** Most policy turns of an episode; each draws its count from its seed, uniform in 1..maxTurns. */
  maxTurns: number;
  /** Completion tokens per turn (unset: min(rollout.maxTokens, TOY_LEN)). */
  tokensPerTurn?: number;
  /** Base URL (…/v1) of the chat endpoint asked between turns; unset: none. */
  simulatorUrl?: string;
}

export function episodeOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): SyntheticEpisodeOptions {
  const int = (name: string) => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name}=${v}: expected a whole number >= 1`);
    return n;
  };
  const tokens = int('GSTEER_SYNTHETIC_TOKENS');
  return {
    maxTurns: int('GSTEER_SYNTHETIC_TURNS') ?? 1,
    ...(tokens ? { tokensPerTurn: tokens } : {}),
    ...(env.GSTEER_SYNTHETIC_SIMULATOR_URL ? { simulatorUrl: env.GSTEER_SYNTHETIC_SIMULATOR_URL } : {}),
  };
}

/** Sampling seed of turn t: the job's own for the first (the one-turn episode of old), derived after. */
const turnSeed = (seed: number, t: number) => (t === 0 ? seed : Rng.derive(seed, 'synthetic-turn', t).nextU32() >>> 1);

export function syntheticRolloutPart(cfg: RunConfig, o: SyntheticEpisodeOptions, sink?: CallSink): RolloutPart {
  const clients = new Map<string, OpenAIPolicyClient>();
  const client = (baseUrl: string) => {
    let c = clients.get(baseUrl);
    const config = {
      baseUrl,
      apiKeyEnv: cfg.policy.apiKeyEnv,
      timeoutMs: cfg.policy.timeoutMs,
      maxRetries: cfg.policy.maxRetries,
      retryBaseMs: 200,
      concurrency: Math.max(64, cfg.rollout.concurrency),
    };
    if (!c) clients.set(baseUrl, (c = new OpenAIPolicyClient(sink ? policyEndpoint(config, sink) : config)));
    return c;
  };
  const simulator: Endpoint | null = o.simulatorUrl ? createEndpoint(endpointOptions('simulator', cfg.simulator, o.simulatorUrl), sink ? { sink } : {}) : null;
  const maxTokens = o.tokensPerTurn ?? Math.min(cfg.rollout.maxTokens, TOY_LEN);
  return {
    async run({ job, instance, policyUrl, signal }) {
      const query = [...(instance as Instance).query].slice(0, 16).map((ch) => ch.charCodeAt(0) % 900);
      const turnsOf = o.maxTurns > 1 ? 1 + Rng.derive(job.seed, 'synthetic-turns').int(o.maxTurns) : 1;
      const turns: TurnRecord[] = [];
      let context = query;
      let asks = 0;
      for (let t = 0; t < turnsOf; t++) {
        if (signal?.aborted) throw new Error(`rollout ${job.groupId}/t${job.index} cancelled`);
        const promptIds = context;
        const res = await withCallGroup(job.groupId, () =>
          client(policyUrl).complete({
            promptIds,
            maxTokens,
            temperature: cfg.rollout.temperature,
            topP: cfg.rollout.topP,
            seed: turnSeed(job.seed, t),
            model: job.model,
          }),
        );
        turns.push({
          index: t,
          tokens: { promptIds, completionIds: res.completionIds, logprobs: res.logprobs },
          completionText: res.text,
          parsed: parseTurn(res.text),
          observation: { kind: 'none' },
        });
        context = [...promptIds, ...res.completionIds];
        if (t + 1 < turnsOf && simulator) {
          // The user simulator's answer to this turn becomes part of the next prompt.
          const reply = await withCallGroup(job.groupId, () =>
            simulator.chat({
              messages: [{ role: 'user', content: `Turn ${t} of episode ${job.groupId}/t${job.index}: what do you want?` }],
              maxTokens: 64,
              seed: turnSeed(job.seed, t),
            }),
          );
          context = [...context, ...[...reply.text].slice(0, 32).map((ch) => ch.charCodeAt(0) % 900)];
          asks++;
        }
      }
      const last = turns.at(-1)!;
      const ok = last.parsed.ok && last.parsed.turn.action === 'STOP';
      const traj: Trajectory = {
        version: 1,
        runId: job.runId,
        instanceId: instance.id,
        userId: instance.userId,
        groupId: job.groupId,
        index: job.index,
        policyVersion: job.policyVersion,
        snapshotId: job.snapshotId,
        turns,
        finalSlots: [],
        askedQuestions: [],
        retrieveCount: 0,
        askCount: asks,
        termination: ok ? 'stop' : 'invalid',
        ...(last.parsed.ok ? {} : { invalidReason: last.parsed.reason }),
        refinedQuery: ok && last.parsed.ok ? last.parsed.turn.execute : null,
      };
      return traj;
    },
    async close() {},
  };
}
