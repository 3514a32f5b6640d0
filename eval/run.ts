// method §8 evaluation runner: eval.episodesPerInstance episodes per instance (paper: one) in
// the shared environment (policy server, simulator, frozen user memory; the method's action
// menu), then factor extraction from q*, cosines, and pooled metrics per split group
// (eval/spread.ts adds their bootstrap spread over instances). Episodes use the eval
// sampling settings (paper: temperature 0.7, top-p 1.0, up to 1024 new tokens) and a seed
// derived from (run seed, "eval", instance id[, episode]), so a rerun replays the same calls.
import type { EvalConfig, RolloutConfig } from '../configs/schema.ts';
import type { Instance } from '../data/schema.ts';
import type { EvalGroup } from '../data/splits.ts';
import type { Encoder } from '../core/encoder.ts';
import { runEpisode } from '../rollout/episode.ts';
import type { PolicyClient } from '../rollout/policy-client.ts';
import type { UserSimulator } from '../rollout/simulator.ts';
import type { Trajectory } from '../core/types.ts';
import type { Tokenizer } from '../core/tokenizer.ts';
import { InputError } from '../util/errors.ts';
import { progressBar } from '../util/progress.ts';
import { Rng } from '../util/rng.ts';
import type { Baseline } from './baselines.ts';
import type { FactorExtractor } from './extractor.ts';
import { buildReport, type EvalReport } from './report.ts';
import { scoreAll, type EpisodeOutcome } from './score.ts';
import type { BootstrapSettings } from './spread.ts';
import { frozenSnapshot, type FrozenStates } from './user-states.ts';

export interface EpisodeEnv {
  policy: PolicyClient;
  model: string; // the `model` field of policy requests (base model or adapter name)
  simulator: UserSimulator;
  states: FrozenStates;
  tokenizer: Tokenizer;
}

export interface EpisodeRunOptions {
  runId: string;
  seed: number;
  baseline: Baseline;
  rollout: Pick<RolloutConfig, 'maxTurns' | 'retrieveCandidates' | 'retrieveTopK'> & Partial<Pick<RolloutConfig, 'constrained'>>;
  sampling: Pick<EvalConfig, 'temperature' | 'topP' | 'maxTokens'>;
  concurrency: number;
  episodesPerInstance?: number; // eval.episodesPerInstance; 1 when absent
}

/** Episode e of an instance; e = 0 keeps the seed one-episode evaluations always had. */
export const evalSeed = (seed: number, instanceId: string, episode = 0) =>
  (episode === 0 ? Rng.derive(seed, 'eval', instanceId) : Rng.derive(seed, 'eval', instanceId, episode)).nextU32() & 0x7fffffff;

/** `episodesPerInstance` (default 1) episodes per instance, bounded concurrency, results instance-major. */
export async function runEvalEpisodes(env: EpisodeEnv, instances: readonly Instance[], o: EpisodeRunOptions): Promise<Trajectory[]> {
  const E = o.episodesPerInstance ?? 1;
  const jobs = instances.flatMap((inst) => Array.from({ length: E }, (_, e) => ({ inst, e })));
  const bar = progressBar('eval episodes', jobs.length);
  const out = new Array<Trajectory>(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const k = next++;
      const { inst, e } = jobs[k] as (typeof jobs)[number];
      out[k] = await runEpisode({ policy: env.policy, simulator: env.simulator, store: env.states.store, tokenizer: env.tokenizer }, inst, {
        runId: o.runId,
        groupId: `eval-${inst.id}`,
        index: e,
        policyVersion: 0,
        model: env.model,
        snapshotId: await frozenSnapshot(env.states.store, inst.userId),
        seed: evalSeed(o.seed, inst.id, e),
        rollout: {
          maxTurns: o.rollout.maxTurns,
          retrieveCandidates: o.rollout.retrieveCandidates,
          retrieveTopK: o.rollout.retrieveTopK,
          temperature: o.sampling.temperature,
          topP: o.sampling.topP,
          maxTokens: o.sampling.maxTokens,
          constrained: o.rollout.constrained ?? false, // evaluated as it is trained
        },
        ...(o.baseline.actions ? { actions: o.baseline.actions } : {}),
      });
      bar.tick(1, out[k].termination);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency, jobs.length)) }, worker));
  bar.done();
  return out;
}

export interface ScoreOptions {
  instances: readonly Instance[];
  groups: ReadonlyMap<string, EvalGroup>;
  extractor: FactorExtractor;
  encoder: Encoder;
  concurrency: number;
  threshold: number;
  sweep: readonly number[]; // [] = the main threshold only
  method: EvalReport['method'];
  episodesPerInstance: number | null;
  bootstrap: BootstrapSettings;
}

/** Extract, embed, pool: the report for finished episodes. */
export async function scoreOutcomes(outcomes: readonly (EpisodeOutcome & { where?: string })[], o: ScoreOptions): Promise<EvalReport> {
  const byId = new Map(o.instances.map((i) => [i.id, i]));
  for (const ep of outcomes)
    if (!byId.has(ep.instanceId))
      throw new InputError(
        `${ep.where ?? 'trajectory'}: instanceId "${ep.instanceId}" is not in the configured instances (data.instances); evaluate with the dataset the trajectories came from`,
      );
  const bar = progressBar('eval scoring', outcomes.length);
  const scored = await scoreAll(
    outcomes.map(({ instanceId, termination, refinedQuery, askCount, retrieveCount }) => ({ instanceId, termination, refinedQuery, askCount, retrieveCount })),
    (id) => ({ instance: byId.get(id) as Instance, group: o.groups.get(id) ?? null }),
    o.extractor,
    o.encoder,
    o.concurrency,
    bar,
  );
  bar.done();
  return buildReport(scored, {
    threshold: o.threshold,
    sweep: o.sweep,
    method: o.method,
    encoder: o.encoder.name,
    extractor: o.extractor.name,
    episodesPerInstance: o.episodesPerInstance,
    bootstrap: o.bootstrap,
  });
}
