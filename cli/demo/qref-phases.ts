// The QREF demo (`gsteer demo --config configs/qref-demo.yaml`, method §13): the pipeline
// configs/qref-demo.yaml describes, as phases run in order by cli/commands/demo.ts:
//   sft-data  the refiner's SFT examples (train-split demonstrations) into <run>/sft/examples.jsonl;
//   model     when policy.model lacks config.json: grow it with the committed base's recipe
//             (cli/demo/qref-base.ts: gsteer model init / pretrain / expand on those examples
//             with copy augmentation, resumable stage by stage; models/tiny-qref/README.md);
//   sft       LoRA SFT of the refiner on the examples (the same stage `gsteer train` runs first);
//   select    with demo.select: the train questions PPO and GRPO train on, by the SFT refiner's
//             pass rate on a seed stream of its own (cli/demo/qref-select.ts);
//   ppo       `gsteer train` with the config, from the SFT adapter, with --dashboard;
//   grpo      `gsteer train` with algorithm grpo from the same SFT adapter and the same budget
//             (updates and episodes per update; its run in <runName>-grpo);
//   eval      `gsteer eval` (env qref) of the SFT, the final PPO and the final GRPO adapter on
//             the test and the train split, the same seeds for all; one table of their reports,
//             the paired differences in refined recall (PPO - SFT, GRPO - SFT, PPO - GRPO), the
//             reward and critic curves, the reward trend and the critic's explained-variance trend.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { adapterName, runLayout } from '../../checkpoints/layout.ts';
import { readQwen3Config } from '../../model/config.ts';
import { modelRecords } from '../../model/records.ts';
import { seededResampler, type Estimate } from '../../eval/bootstrap.ts';
import { verdict } from '../../eval/paired.ts';
import { qrefPairedDifference, type QrefEpisodeScore, type QrefMetric } from '../../eval/qref.ts';
import { formatTrend, quarters, quarterTrend, runGroupMeans } from '../../monitor/learning.ts';
import { criticVariancesOf, explainedVarianceTrend, formatExplainedVarianceTrend } from '../../monitor/explained-variance.ts';
import { readMetrics } from '../../monitor/sink.ts';
import { explainedVarianceCurve, metricCurves, rewardCurves } from '../../monitor/terminal-curve.ts';
import { sftLayout } from '../../trainer/sft/checkpoint.ts';
import { writeQrefSftExamples } from '../../rollout/qref/sft-examples.ts';
import { writeFileAtomic } from '../../util/atomic.ts';
import { latestAdapter } from './eval-phase.ts';
import type { Phase, PhaseContext } from './phase.ts';
import { sftPhase } from './sft-phase.ts';
import { qrefSelectPhase } from './qref-select.ts';
import { growQrefBase, QREF_BASE_MINUTES, QREF_BASE_STAGES, RECIPE_RECORD } from './qref-base.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { InputError } from '../../util/errors.ts';

/** What the base's records say: its recipe (recipe.json, cli/demo/qref-base.ts), or that it has none. */
export function qrefBaseNote(dir: string): string {
  const f = join(dir, RECIPE_RECORD);
  if (!existsSync(f)) {
    const c = readQwen3Config(dir);
    const records = Object.keys(modelRecords(dir)).length;
    return `${c.numHiddenLayers} layers, hidden ${c.hiddenSize}; no QREF recipe record (${records ? 'trained elsewhere' : 'an untrained model: expect no learning'})`;
  }
  const r = JSON.parse(readFileSync(f, 'utf8')) as { minutes: number; stages: { spec: { steps: number } }[] };
  return `${readQwen3Config(dir).numHiddenLayers} layers, grown by ${r.stages.length} stage(s), ${r.stages.reduce((n, x) => n + x.spec.steps, 0)} updates in ${r.minutes.toFixed(0)} min (recipe in ${join(dir, 'README.md')})`;
}

/** The files whose tokens the base keeps: the corpus, questions, demonstrations, the prompt source and the SFT examples. */
export function qrefVocabFiles(ctx: PhaseContext): string[] {
  const d = ctx.cfg.qref.data;
  return [d.corpus, d.questions, ...(d.demonstrations ? [d.demonstrations] : []), 'rollout/qref/prompt.ts', ...(ctx.sftExamples ? [ctx.sftExamples] : [])];
}

const cliArgs = (ctx: PhaseContext) => [...ctx.configFiles.flatMap((f) => ['--config', f]), ...ctx.sets.flatMap((s) => ['--set', s])];

/** One `gsteer eval` report (cli/commands/eval.ts, env qref). */
export interface QrefReport {
  label: string;
  split: string;
  summary: Record<QrefMetric, Estimate>;
  episodes: QrefEpisodeScore[];
}

export interface QrefRow {
  policy: string;
  report: QrefReport;
}

const pm = (e: Estimate, d = 3) => (e.value === null ? 'n/a' : `${e.value.toFixed(d)} ± ${e.se === null ? 'n/a' : e.se.toFixed(d)}`);

/** policy x split: each metric ± its bootstrap SE over questions, as `gsteer eval` reports it. */
export function qrefDemoTable(rows: readonly QrefRow[]): string {
  const head = '| policy | split (questions) | episodes | recall original | recall refined | reward | invalid rate | filter precision | filter recall |';
  const line = ({ policy, report: r }: QrefRow) => {
    const s = r.summary;
    const questions = new Set(r.episodes.map((e) => e.questionId)).size;
    return `| ${policy} | ${r.split} (${questions}) | ${r.episodes.length} | ${pm(s.recall_original)} | ${pm(s.recall_refined)} | ${pm(s.reward)} | ${pm(s.invalid_rate)} | ${pm(s.filter_precision)} | ${pm(s.filter_recall)} |`;
  };
  return [head, '|---|---|---|---|---|---|---|---|---|', ...rows.map(line)].join('\n');
}

/**
 * Per split and pair [a, b] of policy keys (both present), b - a in refined recall (and reward):
 * paired over the same questions and seeds, with a verdict.
 */
export function qrefDemoDifferences(
  rows: readonly { key: string; row: QrefRow }[],
  pairs: readonly [string, string][],
  seed: number,
  samples: number,
  level: number,
): string {
  const out: string[] = [];
  for (const split of [...new Set(rows.map((r) => r.row.report.split))]) {
    const of = (key: string) => rows.find((r) => r.key === key && r.row.report.split === split)?.row;
    for (const [ka, kb] of pairs) {
      const [a, b] = [of(ka), of(kb)];
      if (!a || !b) continue;
      const d = (m: QrefMetric) => verdict(qrefPairedDifference(a.report.episodes, b.report.episodes, m, seededResampler(seed, samples), level), 3);
      out.push(`- ${split}: ${b.policy} - ${a.policy}: recall refined ${d('recall_refined')}; reward ${d('reward')}`);
    }
  }
  return out.join('\n');
}

export const qrefSftDataPhase: Phase = {
  name: 'sft-data',
  async run({ cfg }) {
    if (!cfg.sft.enabled) return { code: 0 };
    const out = sftLayout(join(cfg.runDir, cfg.runName)).examples;
    console.error(`demo: ${writeQrefSftExamples(cfg, out)}`);
    return { code: 0, sftExamples: out };
  },
};

export const qrefModelPhase: Phase = {
  name: 'model',
  async run(ctx) {
    const { cfg } = ctx;
    if (existsSync(join(cfg.policy.model, 'config.json'))) {
      console.error(`demo: policy base ${cfg.policy.model} (found: ${qrefBaseNote(cfg.policy.model)}; delete the folder to regrow it)`);
      return { code: 0 };
    }
    if (!ctx.sftExamples)
      throw new InputError(
        `${cfg.policy.model} is missing and sft.enabled is false: the base grows from the refiner's SFT examples (cli/demo/qref-base.ts); set sft.enabled=true or point policy.model at a model`,
      );
    console.error(
      `demo: growing the base in ${cfg.policy.model} with its recipe (${QREF_BASE_STAGES.length} stage(s), about ${QREF_BASE_MINUTES} min on 2 cores; resumable: a rerun continues after the last finished stage)`,
    );
    const model = await import('../commands/model.ts');
    return {
      code: await growQrefBase({
        out: cfg.policy.model,
        examples: ctx.sftExamples,
        vocabFrom: qrefVocabFiles(ctx),
        model: model.run,
        log: (l) => console.error(`demo: ${l}`),
      }),
    };
  },
};

export const qrefSftPhase: Phase = {
  name: 'sft',
  async run({ cfg, sftExamples }) {
    if (!cfg.sft.enabled || !sftExamples) return { code: 0 };
    const r = await sftPhase({ ...cfg, sft: { ...cfg.sft, examples: sftExamples } });
    return { code: 0, initAdapter: r.adapterDir };
  },
};

export const qrefPpoPhase: Phase = {
  name: 'ppo',
  async run(ctx) {
    const train = await import('../commands/train.ts');
    const code = await train.run([...cliArgs(ctx), '--dashboard', ...(ctx.initAdapter ? ['--init-adapter', ctx.initAdapter] : [])]);
    console.error(`demo: the dashboard of the finished run: npx gsteer monitor ${join(ctx.cfg.runDir, ctx.cfg.runName)} --serve`);
    return { code };
  },
};

/** The GRPO run beside PPO: its own run directory and queues, the config's grpo.* (same updates, same episodes per update). */
export const grpoRun = (cfg: RunConfig) => ({ runName: `${cfg.runName}-grpo`, prefix: `${cfg.queues.prefix}-grpo` });

export const qrefGrpoPhase: Phase = {
  name: 'grpo',
  async run(ctx) {
    const { cfg } = ctx;
    const per = cfg.rollout.groupSize * cfg.grpo.groupsPerUpdate;
    const ppoPer = cfg.ppo.batchSize * cfg.ppo.rolloutsPerPrompt;
    if (per !== ppoPer)
      console.error(
        `demo: note: GRPO samples ${per} episodes per update (rollout.groupSize x grpo.groupsPerUpdate), PPO ${ppoPer} (ppo.batchSize x ppo.rolloutsPerPrompt): not the same budget`,
      );
    const { runName, prefix } = grpoRun(cfg);
    const train = await import('../commands/train.ts');
    const sets = ['algorithm=grpo', `runName=${runName}`, `queues.prefix=${prefix}`].flatMap((x) => ['--set', x]);
    return { code: await train.run([...cliArgs(ctx), ...sets, ...(ctx.initAdapter ? ['--init-adapter', ctx.initAdapter] : [])]) };
  },
};

/** Where the eval phase writes `gsteer eval`'s report of one policy on one split. */
export const qrefReportFile = (root: string, policy: 'sft' | 'ppo' | 'grpo', split: string) => join(root, 'eval', `qref-${policy}-${split}.json`);

/** The pairs the demo compares, by policy key: each trained policy against SFT, then PPO against GRPO. */
export const QREF_DEMO_PAIRS: [string, string][] = [
  ['sft', 'ppo'],
  ['sft', 'grpo'],
  ['grpo', 'ppo'],
];

/** Did a per-update metric rise? Its first quarter of updates against its last (monitor/learning.ts quarterTrend, updates as the samples). */
export function formatMetricTrend(name: string, values: readonly number[]): string {
  const t = quarterTrend(values);
  if (!t) return `${name}: fewer than 8 updates, too few to compare quarters`;
  const f = (x: number) => x.toFixed(4);
  return `${name}: first ${t.quarter} updates ${f(t.first)}, last ${t.quarter} ${f(t.last)}, difference ${f(t.diff)} ± ${f(t.se)} (SE) -> ${t.learned ? 'up by more than 2 SE' : 'not above 2 SE'}`;
}

export const qrefEvalPhase: Phase = {
  name: 'eval',
  async run(ctx) {
    const { cfg, initAdapter } = ctx;
    const layout = runLayout(resolve(cfg.runDir, cfg.runName));
    const grpoLayout = runLayout(resolve(cfg.runDir, grpoRun(cfg).runName));
    const final = latestAdapter(layout.adapters);
    if (!final || final.version === 0) {
      console.error('demo: no PPO adapter was written; nothing to evaluate');
      return { code: 1 };
    }
    const grpo = latestAdapter(grpoLayout.adapters);
    const policies = [
      ...(initAdapter ? [{ key: 'sft' as const, label: 'SFT', dir: initAdapter }] : []),
      { key: 'ppo' as const, label: `PPO ${adapterName(final.version)}`, dir: final.dir },
      ...(grpo && grpo.version > 0 ? [{ key: 'grpo' as const, label: `GRPO ${adapterName(grpo.version)}`, dir: grpo.dir }] : []),
    ];
    const evalCmd = await import('../commands/eval.ts');
    const rows: QrefRow[] = [];
    const keyed: { key: string; row: QrefRow }[] = [];
    for (const split of ['test', 'train'])
      for (const p of policies) {
        const out = qrefReportFile(layout.root, p.key, split);
        console.error(`demo: gsteer eval ${p.label} on the ${split} split -> ${out}`);
        // with grpo.trainIds the train rows are the questions PPO and GRPO train on (as the G-STEER demo's)
        const ids = split === 'train' && cfg.grpo.trainIds ? ['--ids', cfg.grpo.trainIds.join(',')] : [];
        const code = await evalCmd.run([...cliArgs(ctx), '--adapter', p.dir, '--split', split, ...ids, '--label', p.label, '--out', out]);
        if (code !== 0) return { code };
        const row = { policy: p.label, report: JSON.parse(readFileSync(out, 'utf8')) as QrefReport };
        rows.push(row);
        keyed.push({ key: p.key, row });
      }
    const { samples, level } = cfg.eval.bootstrap;
    const E = cfg.eval.episodesPerInstance;
    const subset = cfg.grpo.trainIds ? `; train = the ${cfg.grpo.trainIds.length} questions PPO and GRPO train on (grpo.trainIds)` : '';
    const title = `gsteer eval (env qref): ${policies.map((p) => p.label).join(' / ')}, ${E} episode(s) per question, the same sampling seeds for every policy (temperature ${cfg.eval.temperature}); ± bootstrap SE over questions (${samples} resamples)${subset}`;
    const diffs = `Paired differences (same questions and seeds; ± SE from the same resamples; under 2 SE = within noise):\n${qrefDemoDifferences(keyed, QREF_DEMO_PAIRS, cfg.seed, samples, level) || '- none (no SFT adapter)'}`;
    const text = `${title}\n\n${qrefDemoTable(rows)}\n\n${diffs}\n\nBase: ${cfg.policy.model} (${qrefBaseNote(cfg.policy.model)}).`;
    const records = readMetrics(layout.metrics);
    const evVars = criticVariancesOf(records); // null: a run from before the critic's variances were logged
    const evQuarters = evVars && quarters(evVars);
    const pooledCurve = evVars && evQuarters ? `\n\n${explainedVarianceCurve(evVars, evQuarters.q)}` : '';
    const critic = metricCurves(records, ['critic/vf_loss', 'critic/vf_explained_var']) + pooledCurve;
    console.log(`\nPPO:\n${rewardCurves(records)}${critic ? `\n\n${critic}` : ''}`);
    if (existsSync(grpoLayout.metrics)) console.log(`\nGRPO:\n${rewardCurves(readMetrics(grpoLayout.metrics))}`);
    console.log(`\n${text}`);
    const out = join(layout.root, 'eval', 'demo-table.md');
    const ev = records.map((r) => r['critic/vf_explained_var']).filter((x): x is number => typeof x === 'number');
    const trends = [
      `PPO ${formatTrend(quarterTrend(runGroupMeans(layout.root)))}`,
      ...(existsSync(grpoLayout.root) ? [`GRPO ${formatTrend(quarterTrend(runGroupMeans(grpoLayout.root)))}`] : []),
      evVars
        ? formatExplainedVarianceTrend(explainedVarianceTrend(evVars, cfg.seed))
        : formatMetricTrend('PPO critic explained variance (mean of per-update ratios)', ev),
    ].join('\n');
    writeFileAtomic(out, `${text}\n\n${trends}\n`);
    console.log(`\n${trends}\n(table: ${out})`);
    return { code: 0 };
  },
};

export const QREF_PHASES: Phase[] = [qrefSftDataPhase, qrefModelPhase, qrefSftPhase, qrefSelectPhase, qrefPpoPhase, qrefGrpoPhase, qrefEvalPhase];
