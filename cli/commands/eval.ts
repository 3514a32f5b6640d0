// `gsteer eval`: intrinsic evaluation (method §8; eval/README.md). Either runs one episode per
// instance of a split against the policy server, or scores recorded trajectories; then
// extracts factors from each q*, prints WCov / E-WCov / P / R / F1 overall and per split
// group with their bootstrap spread, and writes the JSON report (and, for episodes, the
// trajectories beside it). `gsteer eval compare` is cli/commands/eval-compare.ts.
import { mkdirSync } from 'node:fs';
import { writeFileAtomic } from '../../util/atomic.ts';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { loadInstances } from '../../data/load.ts';
import { evalGroups } from '../../data/splits.ts';
import type { Instance } from '../../data/schema.ts';
import type { Encoder } from '../../core/encoder.ts';
import { createEncoder } from '../../reward/encoders/index.ts';
import { simulatorFrom } from '../../rollout/from-config.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { CallAggregator, JsonlCallSink, teeSinks, type CallSink } from '../../endpoints/index.ts';
import { InputError } from '../../util/errors.ts';
import { writeTrajectories } from '../../core/trajectory-file.ts';
import { baselineNamed, BASELINES } from '../../eval/baselines.ts';
import { extractorFrom } from '../../eval/extractors.ts';
import { openPolicy } from '../../eval/policy-endpoint.ts';
import { seededResampler } from '../../eval/bootstrap.ts';
import { Intrinsic, table2Groups } from '../../eval/compare-tables.ts';
import { formatSweep, formatTable, type EvalReport } from '../../eval/report.ts';
import { toMarkdown } from '../../eval/table.ts';
import { evalSeed, runEvalEpisodes, scoreOutcomes } from '../../eval/run.ts';
import { readOutcomes } from '../../eval/trajectories.ts';
import { finalRunStates, frozenUserStates } from '../../eval/user-states.ts';
import { usage as compareUsage } from './eval-compare.ts';
import { checkOutFile } from '../out-path.ts';
import { usage as downstreamUsage } from './eval-downstream.ts';

export const summary = 'intrinsic evaluation: WCov, E-WCov, precision/recall/F1 by split group (method §8)';
export const usage = `usage: gsteer eval --config FILE [--set key=value ...] [--adapter DIR | --policy-model NAME]
                   [--split test|train|all] [--baseline ${Object.keys(BASELINES).join('|')}]
                   [--run RUN_DIR | --user-states FILE] [--threshold 0.55 | --sweep] [--label NAME] [--out FILE]
       gsteer eval --config FILE --trajectories DIR_OR_JSONL [--split ...] [--threshold T | --sweep] [--out FILE]

  --config / --set    run config: data.instances, policy.*, simulator.*, encoder.*, rollout.maxTurns,
                      eval.* (temperature 0.7, topP 1.0, maxTokens 1024, extractor rule|llm, concurrency)
  --adapter DIR       evaluate this PEFT LoRA adapter (loaded as "gsteer-eval")
  --policy-model NAME the model field of requests (a base model or an adapter the server has);
                      default: the base model (policy.model)
  env: qref           evaluates the QREF refiner instead (method §13): recall of the original
                      vs refined batches, reward, invalid rate, filter precision/recall, with
                      bootstrap SEs over questions; --adapter, --policy-model, --split, --out,
                      --ids Q1,Q2,... (only these questions of the split, e.g. grpo.trainIds)
  --split S           instances to evaluate: test (default for episodes), train, or all (default
                      for --trajectories)
  --baseline B        action menu and prompt: gsteer (default; the trained policy's prompt),
                      direct (Stop), memory_rag (Retrieve/Stop), clarify (Ask/Stop),
                      memory_clarify (all three, generic prompt), clarifier_trained (the
                      IntentRL-style clarifier's adapter); or a released checkpoint behind its
                      own endpoint, mapped to Ask/Stop: mistral_interact
                      (eval.baselines.mistralInteract), cep_rewrite (CEP's consultant at
                      eval.baselines.cep, q* rewritten by eval.baselines.cep.rewriter, Qwen3-8B)
  --run RUN_DIR       freeze the final user states of that GRPO run (its last
                      steps/step-N/user_states.jsonl; the paper's protocol)
  --user-states FILE  freeze these user states instead (e.g. a checkpoint's user_states.jsonl);
                      with neither, the states GRPO starts from (grpo.initialUserStates, empty by
                      default). Users with no train instance always start empty; test
                      interactions never write.
  --trajectories P    score recorded trajectories (JSONL, JSON, or a run's trajectories/ dir)
                      instead of running episodes
  --threshold T       cosine at which a target counts as covered (default eval.threshold, 0.55)
  --sweep             also report every threshold in eval.sweep (0.45 .. 0.70)
  --label NAME        the method's name in the report and in gsteer eval compare (default: the
                      baseline's, e.g. G-STEER)
  --out FILE          JSON report (default runs/<runName>/eval/<baseline>.json); episodes also
                      go to FILE with .trajectories.jsonl, re-scorable with --trajectories
  eval.episodesPerInstance episodes per instance (default 1); every pooled metric gets a bootstrap
  SE over instances (eval.bootstrap.samples resamples, seeded by seed)

${compareUsage}

${downstreamUsage}`;

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

async function episodes(cfg: RunConfig, v: EpisodeFlags, selected: Instance[], all: Instance[], encoder: Encoder, calls: CallSink) {
  const baseline = baselineNamed(v.baseline ?? 'gsteer');
  if ('external' in baseline && baseline.external) {
    // A released checkpoint behind its own endpoint (method §8.5): no policy server, no user state.
    if (v.adapter || v['policy-model'] || v.run || v['user-states']) throw new InputError(`--baseline ${baseline.name} runs a released checkpoint (eval.baselines); --adapter, --policy-model, --run and --user-states do not apply: drop them`);
    const { externalAgentFrom, runExternalEpisodes } = await import('../../eval/external/run.ts');
    const agent = externalAgentFrom(cfg, baseline.external, calls);
    const trajs = await runExternalEpisodes(agent, simulatorFrom(cfg, encoder, calls), selected, {
      runId: `${cfg.runName}-eval`, maxTurns: cfg.rollout.maxTurns, concurrency: cfg.eval.concurrency, episodesPerInstance: cfg.eval.episodesPerInstance,
      seedOf: (id, e) => evalSeed(cfg.seed, id, e),
    });
    return { trajs, method: { baseline: baseline.name, label: v.label ?? baseline.label, model: agent.model, source: 'episodes' as const } };
  }
  const source = frozenStatesSource(cfg, v);
  console.error(`gsteer eval: frozen user states: ${source.file ?? '(none)'} (${source.why})`);
  const states = await frozenUserStates(source.file ? [source.file] : [], all, encoder);
  if (states.dropped.length) console.error(`gsteer eval: ${states.dropped.length} user state(s) without a train instance start empty (unseen users): ${states.dropped.join(', ')}`);
  const policy = await openPolicy(cfg, { adapter: v.adapter, policyModel: v['policy-model'], log: (l) => console.error(`gsteer eval: ${l}`), calls });
  try {
    const trajs = await runEvalEpisodes(
      { policy: policy.client, model: policy.model, simulator: simulatorFrom(cfg, encoder, calls), states, tokenizer: qwen3Tokenizer() },
      selected,
      { runId: `${cfg.runName}-eval`, seed: cfg.seed, baseline, rollout: cfg.rollout, sampling: cfg.eval, concurrency: cfg.eval.concurrency, episodesPerInstance: cfg.eval.episodesPerInstance },
    );
    const method = { baseline: baseline.name, label: v.label ?? baseline.label, model: policy.model, source: 'episodes' as const, ...(v.adapter ? { adapter: v.adapter } : {}) };
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

/** Runs (or reads) the episodes and scores them; what `run` prints and writes. */
export async function evaluate(cfg: RunConfig, v: EvalFlags): Promise<{ report: EvalReport; trajs: Awaited<ReturnType<typeof episodes>>['trajs'] | null; tau: number }> {
  const tau = threshold(v.threshold, cfg);
  const all = loadInstances(cfg.data.instances);
  const fromFiles = v.trajectories !== undefined;
  if (fromFiles && (v.adapter || v['policy-model'] || v.baseline || v['user-states'] || v.run))
    throw new InputError('--trajectories scores recorded episodes; --adapter, --policy-model, --baseline, --run and --user-states only apply when running episodes: drop them');
  const split = v.split ?? (fromFiles ? 'all' : 'test');
  const selected = selectSplit(all, split).filter((i) => !v.ids || v.ids.includes(i.id));
  if (!fromFiles && selected.length === 0) throw new InputError(`no instances with split "${v.split ?? 'test'}" in ${cfg.data.instances.join(', ')}; check --split or data.instances`);
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
    if (outcomes.length === 0) throw new InputError(`--trajectories ${v.trajectories}: no trajectory is of a "${split}" instance; pass --split all (or the split they were recorded on)`);
    method = { baseline: 'trajectories', label: v.label ?? `trajectories ${v.trajectories}`, model: null, source: 'trajectories' };
  } else {
    ({ trajs, method } = await episodes(cfg, v, selected, all, encoder, calls));
    outcomes = trajs;
  }
  const report = await scoreOutcomes(outcomes, {
    instances: all, groups: evalGroups(all), extractor: extractorFrom(cfg.eval.extractor, (m) => console.error(`gsteer eval: ${m}`), calls), encoder,
    concurrency: cfg.eval.concurrency, threshold: tau, sweep: v.sweep ? cfg.eval.sweep : [], method,
    episodesPerInstance: fromFiles ? null : cfg.eval.episodesPerInstance, bootstrap: { samples: cfg.eval.bootstrap.samples, level: cfg.eval.bootstrap.level, seed: cfg.seed },
  });
  const summary = Object.entries(aggregate.takeWindow()).filter(([k]) => /\/(calls|errors|retries)$/.test(k));
  if (summary.length) console.error(`gsteer eval: LLM calls: ${summary.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  return { report, trajs, tau };
}

export async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'compare') return (await import('./eval-compare.ts')).runCompare(argv.slice(1));
  if (argv[0] === 'downstream') return (await import('./eval-downstream.ts')).runDownstreamCommand(argv.slice(1));
  const { values: v } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
      adapter: { type: 'string' },
      'policy-model': { type: 'string' },
      split: { type: 'string' },
      baseline: { type: 'string' },
      'user-states': { type: 'string' },
      run: { type: 'string' },
      trajectories: { type: 'string' },
      threshold: { type: 'string' },
      sweep: { type: 'boolean', default: false },
      label: { type: 'string' },
      out: { type: 'string' },
      ids: { type: 'string' },
    },
  });
  if (v.out) checkOutFile(v.out);
  const cfg = loadConfig(v.config ?? [], v.set ?? []);
  if (v.ids !== undefined && cfg.env !== 'qref') throw new InputError('--ids selects QREF questions (env qref); for G-STEER instances use --split');
  if (cfg.env === 'qref') return await runQrefEval(cfg, v); // method §13
  const { ids: _qrefOnly, ...flags } = v;
  const { report, trajs, tau } = await evaluate(cfg, flags);
  const { method } = report;
  const main = report.results.find((r) => r.threshold === tau);
  if (main) console.log(formatTable(main, `${method.label}${method.model ? ` (${method.model})` : ''}`));
  if (v.sweep) console.log(`\nthreshold sweep (overall)\n${formatSweep(report.results)}`);
  const out = v.out ?? join(cfg.runDir, cfg.runName, 'eval', `${method.baseline}.json`);
  const b = report.spread;
  console.log(`\n${toMarkdown(table2Groups([{ name: method.label, file: out, result: report }], tau, new Intrinsic({ resample: seededResampler(b.seed, b.samples), samples: b.samples, level: b.level, seed: b.seed })))}`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileAtomic(out, `${JSON.stringify(report, null, 2)}\n`);
  if (trajs) writeTrajectories(out.replace(/\.json$/, '') + '.trajectories.jsonl', trajs);
  console.log(`\nreport: ${out}`);
  return 0;
}

/** `env: qref`: the refiner's episodes on a split, recall of the original vs refined batches with spread. */
async function runQrefEval(cfg: RunConfig, v: { adapter?: string; 'policy-model'?: string; split?: string; out?: string; label?: string; ids?: string }): Promise<number> {
  const { evaluateQref, qrefTable } = await import('../../eval/qref.ts');
  const split = v.split ?? 'test';
  const r = await evaluateQref(cfg, { split, ...(v.ids !== undefined ? { ids: v.ids.split(',').map((x) => x.trim()).filter(Boolean) } : {}), ...(v.adapter ? { adapter: v.adapter } : {}), ...(v['policy-model'] ? { policyModel: v['policy-model'] } : {}), log: (l) => console.error(`gsteer eval: ${l}`) });
  const label = v.label ?? (v.adapter ? `adapter ${v.adapter}` : r.model);
  console.log(`QREF refiner: ${label}, split ${split}, ${r.episodes.length} episode(s), bootstrap over questions\n${qrefTable(r.summary, cfg.eval.bootstrap.level)}`);
  const out = v.out ?? join(cfg.runDir, cfg.runName, 'eval', 'qref.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileAtomic(out, `${JSON.stringify({ v: 1, env: 'qref', label, model: r.model, split, summary: r.summary, episodes: r.episodes }, null, 2)}\n`);
  writeTrajectories(out.replace(/\.json$/, '') + '.trajectories.jsonl', r.trajectories);
  console.error(`gsteer eval: wrote ${out}`);
  return 0;
}
