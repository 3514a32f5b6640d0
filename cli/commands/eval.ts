// `gsteer eval`: intrinsic evaluation (method §8; eval/README.md), the command line around
// eval/evaluate.ts (which runs one episode per instance of a split against the policy server,
// or scores recorded trajectories). This file parses the flags, prints WCov / E-WCov / P / R /
// F1 overall and per split group with their bootstrap spread, and writes the JSON report (and,
// for episodes, the trajectories beside it). `gsteer eval compare` is cli/commands/eval-compare.ts.
import { mkdirSync } from 'node:fs';
import { writeFileAtomic } from '../../util/atomic.ts';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { InputError } from '../../util/errors.ts';
import { writeTrajectories } from '../../core/trajectory-file.ts';
import { BASELINES } from '../../eval/baselines.ts';
import { seededResampler } from '../../eval/bootstrap.ts';
import { Intrinsic, table2Groups } from '../../eval/compare-tables.ts';
import { formatSweep, formatTable } from '../../eval/report.ts';
import { toMarkdown } from '../../eval/table.ts';
import { usage as compareUsage } from './eval-compare.ts';
import { checkOutFile } from '../out-path.ts';
import { usage as downstreamUsage } from './eval-downstream.ts';
import { evaluate } from '../../eval/evaluate.ts';

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

const log = (line: string) => console.error(`gsteer eval: ${line}`);

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
  const { report, trajs, tau } = await evaluate(cfg, flags, log);
  const { method } = report;
  const main = report.results.find((r) => r.threshold === tau);
  if (main) console.log(formatTable(main, `${method.label}${method.model ? ` (${method.model})` : ''}`));
  if (v.sweep) console.log(`\nthreshold sweep (overall)\n${formatSweep(report.results)}`);
  const out = v.out ?? join(cfg.runDir, cfg.runName, 'eval', `${method.baseline}.json`);
  const b = report.spread;
  console.log(
    `\n${toMarkdown(table2Groups([{ name: method.label, file: out, result: report }], tau, new Intrinsic({ resample: seededResampler(b.seed, b.samples), samples: b.samples, level: b.level, seed: b.seed })))}`,
  );
  mkdirSync(dirname(out), { recursive: true });
  writeFileAtomic(out, `${JSON.stringify(report, null, 2)}\n`);
  if (trajs) writeTrajectories(out.replace(/\.json$/, '') + '.trajectories.jsonl', trajs);
  console.log(`\nreport: ${out}`);
  return 0;
}

/** `env: qref`: the refiner's episodes on a split, recall of the original vs refined batches with spread. */
async function runQrefEval(
  cfg: RunConfig,
  v: { adapter?: string; 'policy-model'?: string; split?: string; out?: string; label?: string; ids?: string },
): Promise<number> {
  const { evaluateQref, qrefTable } = await import('../../eval/qref.ts');
  const split = v.split ?? 'test';
  const r = await evaluateQref(cfg, {
    split,
    ...(v.ids !== undefined
      ? {
          ids: v.ids
            .split(',')
            .map((x) => x.trim())
            .filter(Boolean),
        }
      : {}),
    ...(v.adapter ? { adapter: v.adapter } : {}),
    ...(v['policy-model'] ? { policyModel: v['policy-model'] } : {}),
    log,
  });
  const label = v.label ?? (v.adapter ? `adapter ${v.adapter}` : r.model);
  console.log(
    `QREF refiner: ${label}, split ${split}, ${r.episodes.length} episode(s), bootstrap over questions\n${qrefTable(r.summary, cfg.eval.bootstrap.level)}`,
  );
  const out = v.out ?? join(cfg.runDir, cfg.runName, 'eval', 'qref.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileAtomic(out, `${JSON.stringify({ v: 1, env: 'qref', label, model: r.model, split, summary: r.summary, episodes: r.episodes }, null, 2)}\n`);
  writeTrajectories(out.replace(/\.json$/, '') + '.trajectories.jsonl', r.trajectories);
  console.error(`gsteer eval: wrote ${out}`);
  return 0;
}
