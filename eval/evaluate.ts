// Intrinsic evaluation of one policy or of recorded trajectories (method §8; eval/README.md),
// what `gsteer eval` (cli/commands/eval.ts) and the demo's eval phase run: either one episode
// per instance of a split against the policy server (eval/run.ts) under frozen user states,
// or the records of --trajectories (eval/trajectories.ts); then factors extracted from each
// q*, matched and scored with their bootstrap spread (eval/score.ts). Flags keep the command
// line's names, so an error names the flag to change. Progress lines go to `log`.
import { join } from 'node:path';
import type { RunConfig } from '../configs/schema.ts';
import type { Encoder } from '../core/encoder.ts';
import { qwen3Tokenizer } from '../core/tokenizer.ts';
import { evalGroups } from '../data/splits.ts';
import { loadInstances } from '../data/load.ts';
import type { Instance } from '../data/schema.ts';
import { CallAggregator, JsonlCallSink, teeSinks, type CallSink } from '../endpoints/index.ts';
import { createEncoder } from '../encoders/index.ts';
import { simulatorFrom } from '../rollout/from-config.ts';
import { InputError } from '../util/errors.ts';
import { baselineNamed } from './baselines.ts';
import { extractorFrom } from './extractors.ts';
import { openPolicy } from './policy-endpoint.ts';
import type { EvalReport } from './report.ts';
import { evalSeed, runEvalEpisodes, scoreOutcomes } from './run.ts';
import { readOutcomes } from './trajectories.ts';
import { finalRunStates, frozenUserStates } from './user-states.ts';

type Log = (line: string) => void;

function threshold(raw: string | undefined, cfg: RunConfig): number {
  if (raw === undefined) return cfg.eval.threshold;
  const t = Number(raw);
  if (!Number.isFinite(t) || t < -1 || t > 1) throw new InputError(`--threshold must be a cosine in [-1, 1] (e.g. 0.55) but is "${raw}"`);
  return t;
}

function selectSplit(instances: Instance[], split: string): Instance[] {
  if (!['test', 'train', 'all'].includes(split)) throw new InputError(`--split must be test, train or all but is "${split}"`);
  return split === 'all' ? instances : instances.filter((i) => i.split === split);
}

interface EpisodeFlags {
  baseline?: string;
  adapter?: string;
  'policy-model'?: string;
  'user-states'?: string;
  run?: string;
  label?: string;
}

/** Which user-state file evaluation freezes, and why (printed). */
export function frozenStatesSource(cfg: RunConfig, v: Pick<EpisodeFlags, 'user-states' | 'run'>): { file: string | null; why: string } {
  if (v.run && v['user-states']) throw new InputError('--run and --user-states both name the frozen user states; pass one');
  if (v['user-states']) return { file: v['user-states'], why: '--user-states' };
  if (v.run) {
    const f = finalRunStates(v.run);
    return { file: f.file, why: `--run: the final states of ${v.run}, update ${f.step}` };
  }
  if (cfg.grpo.initialUserStates) return { file: cfg.grpo.initialUserStates, why: 'grpo.initialUserStates: the states GRPO starts from' };
  return { file: null, why: 'no --run, --user-states or grpo.initialUserStates: every user starts empty' };
}

async function episodes(cfg: RunConfig, v: EpisodeFlags, selected: Instance[], all: Instance[], encoder: Encoder, calls: CallSink, log: Log) {
  const baseline = baselineNamed(v.baseline ?? 'gsteer');
  if ('external' in baseline && baseline.external) {
    // A released checkpoint behind its own endpoint (method §8.5): no policy server, no user state.
    if (v.adapter || v['policy-model'] || v.run || v['user-states'])
      throw new InputError(
        `--baseline ${baseline.name} runs a released checkpoint (eval.baselines); --adapter, --policy-model, --run and --user-states do not apply: drop them`,
      );
    const { externalAgentFrom, runExternalEpisodes } = await import('./external/run.ts');
    const agent = externalAgentFrom(cfg, baseline.external, calls);
    const trajs = await runExternalEpisodes(agent, simulatorFrom(cfg, encoder, calls), selected, {
      runId: `${cfg.runName}-eval`,
      maxTurns: cfg.rollout.maxTurns,
      concurrency: cfg.eval.concurrency,
      episodesPerInstance: cfg.eval.episodesPerInstance,
      seedOf: (id, e) => evalSeed(cfg.seed, id, e),
    });
    return { trajs, method: { baseline: baseline.name, label: v.label ?? baseline.label, model: agent.model, source: 'episodes' as const } };
  }
  const source = frozenStatesSource(cfg, v);
  log(`frozen user states: ${source.file ?? '(none)'} (${source.why})`);
  const states = await frozenUserStates(source.file ? [source.file] : [], all, encoder);
  if (states.dropped.length) log(`${states.dropped.length} user state(s) without a train instance start empty (unseen users): ${states.dropped.join(', ')}`);
  const policy = await openPolicy(cfg, { adapter: v.adapter, policyModel: v['policy-model'], log, calls });
  try {
    const trajs = await runEvalEpisodes(
      { policy: policy.client, model: policy.model, simulator: simulatorFrom(cfg, encoder, calls), states, tokenizer: qwen3Tokenizer() },
      selected,
      {
        runId: `${cfg.runName}-eval`,
        seed: cfg.seed,
        baseline,
        rollout: cfg.rollout,
        sampling: cfg.eval,
        concurrency: cfg.eval.concurrency,
        episodesPerInstance: cfg.eval.episodesPerInstance,
      },
    );
    const method = {
      baseline: baseline.name,
      label: v.label ?? baseline.label,
      model: policy.model,
      source: 'episodes' as const,
      ...(v.adapter ? { adapter: v.adapter } : {}),
    };
    return { trajs, method };
  } finally {
    await policy.close();
  }
}

export interface EvalFlags extends EpisodeFlags {
  split?: string;
  /** Only these instance ids of the split (the demo's `grpo.trainIds`); not a command-line flag. */
  ids?: readonly string[];
  trajectories?: string;
  threshold?: string;
  sweep?: boolean;
}

/** Runs (or reads) the episodes and scores them: the report and, for episodes, the trajectories (what `gsteer eval` prints and writes). */
export async function evaluate(
  cfg: RunConfig,
  v: EvalFlags,
  log: Log,
): Promise<{ report: EvalReport; trajs: Awaited<ReturnType<typeof episodes>>['trajs'] | null; tau: number }> {
  const tau = threshold(v.threshold, cfg);
  const all = loadInstances(cfg.data.instances);
  const fromFiles = v.trajectories !== undefined;
  if (fromFiles && (v.adapter || v['policy-model'] || v.baseline || v['user-states'] || v.run))
    throw new InputError(
      '--trajectories scores recorded episodes; --adapter, --policy-model, --baseline, --run and --user-states only apply when running episodes: drop them',
    );
  const split = v.split ?? (fromFiles ? 'all' : 'test');
  const selected = selectSplit(all, split).filter((i) => !v.ids || v.ids.includes(i.id));
  if (!fromFiles && selected.length === 0)
    throw new InputError(`no instances with split "${v.split ?? 'test'}" in ${cfg.data.instances.join(', ')}; check --split or data.instances`);
  // LLM calls (policy, simulator, extractor, http encoder): RUN/eval/llm_calls.jsonl, summarized at the end
  const aggregate = new CallAggregator();
  const calls = teeSinks(new JsonlCallSink(join(cfg.runDir, cfg.runName, 'eval', 'llm_calls.jsonl')), aggregate);
  const encoder = createEncoder(cfg.encoder, calls);

  let outcomes;
  let method: EvalReport['method'];
  let trajs = null;
  if (fromFiles) {
    // Unknown instance ids are kept so scoring names them with their file and line.
    const splitOf = new Map(all.map((i) => [i.id, i.split]));
    outcomes = readOutcomes(v.trajectories as string).filter((o) => split === 'all' || !splitOf.has(o.instanceId) || splitOf.get(o.instanceId) === split);
    if (outcomes.length === 0)
      throw new InputError(
        `--trajectories ${v.trajectories}: no trajectory is of a "${split}" instance; pass --split all (or the split they were recorded on)`,
      );
    method = { baseline: 'trajectories', label: v.label ?? `trajectories ${v.trajectories}`, model: null, source: 'trajectories' };
  } else {
    ({ trajs, method } = await episodes(cfg, v, selected, all, encoder, calls, log));
    outcomes = trajs;
  }
  const report = await scoreOutcomes(outcomes, {
    instances: all,
    groups: evalGroups(all),
    extractor: extractorFrom(cfg.eval.extractor, log, calls),
    encoder,
    concurrency: cfg.eval.concurrency,
    threshold: tau,
    sweep: v.sweep ? cfg.eval.sweep : [],
    method,
    episodesPerInstance: fromFiles ? null : cfg.eval.episodesPerInstance,
    bootstrap: { samples: cfg.eval.bootstrap.samples, level: cfg.eval.bootstrap.level, seed: cfg.seed },
  });
  const summary = Object.entries(aggregate.takeWindow()).filter(([k]) => /\/(calls|errors|retries)$/.test(k));
  if (summary.length) log(`LLM calls: ${summary.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  return { report, trajs, tau };
}
