// The QREF demo (`gsteer demo --config configs/qref-demo.yaml`, method §13): the pipeline
// configs/qref-demo.yaml describes, as phases run in order by cli/commands/demo.ts:
//   sft-data  the refiner's SFT examples (train-split demonstrations) into <run>/sft/examples.jsonl;
//   model     when policy.model lacks config.json: `gsteer model init --preset tiny` with the
//             corpus, questions, demonstrations, the prompt source and those examples as its
//             vocabulary (every token id of the SFT targets). A random-init stand-in, not a
//             language model, so no learning is expected (said in the output);
//   sft       LoRA SFT of the refiner on the examples (the same stage `gsteer train` runs first);
//   ppo       `gsteer train` with the config, from the SFT adapter, with --dashboard;
//   eval      `gsteer eval` (env qref) of the SFT and the final PPO adapter on the test and the
//             train split, the same seeds for both; one table of their reports, the paired
//             difference PPO - SFT in refined recall, the reward / critic curves and the trend.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { adapterName, runLayout } from '../../checkpoints/layout.ts';
import { readQwen3Config } from '../../model/config.ts';
import { PRESETS } from '../../model/init.ts';
import { modelRecords } from '../../model/records.ts';
import { seededResampler, type Estimate } from '../../eval/bootstrap.ts';
import { verdict } from '../../eval/paired.ts';
import { qrefPairedDifference, type QrefEpisodeScore, type QrefMetric } from '../../eval/qref.ts';
import { formatTrend, quarterTrend, runGroupMeans } from '../../monitor/learning.ts';
import { readMetrics } from '../../monitor/sink.ts';
import { metricCurves, rewardCurves } from '../../monitor/terminal-curve.ts';
import { sftLayout } from '../../trainer/sft/checkpoint.ts';
import { writeQrefSftExamples } from '../../trainer/sft/qref-examples.ts';
import { writeFileAtomic } from '../../util/atomic.ts';
import { latestAdapter } from './eval-phase.ts';
import type { Phase, PhaseContext } from './phase.ts';
import { sftPhase } from './sft-phase.ts';

export const QREF_STAND_IN =
  'the base is a random-init tiny stand-in (gsteer model init --preset tiny), not a language model: it does not learn the refiner\'s format from the demonstrations with LoRA alone, so no learning is expected and none is claimed; the demo shows the pipeline running end to end';

/**
 * Whether policy.model is such a stand-in: the tiny preset's shape and no training record
 * (model/records.ts). Another base (a real model, a pretrained one) gets no stand-in note.
 */
export function isStandInBase(dir: string): boolean {
  const c = readQwen3Config(dir);
  const tiny = PRESETS.tiny!;
  return Object.keys(modelRecords(dir)).length === 0 && c.hiddenSize === tiny.hiddenSize && c.numHiddenLayers === tiny.numHiddenLayers;
}

/** The files whose tokens the stand-in base keeps (configs/qref-demo.yaml's header), plus the SFT examples. */
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

/** Per split, PPO - SFT in refined recall (and reward): paired over the same questions and seeds, with a verdict. */
export function qrefDemoDifferences(rows: readonly QrefRow[], seed: number, samples: number, level: number): string {
  const out: string[] = [];
  for (const split of [...new Set(rows.map((r) => r.report.split))]) {
    const rs = rows.filter((r) => r.report.split === split);
    for (let i = 1; i < rs.length; i++) {
      const [a, b] = [rs[i - 1]!, rs[i]!];
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
      const note = isStandInBase(cfg.policy.model) ? `note: ${QREF_STAND_IN}` : 'note: not the tiny random-init stand-in (another shape, or training records): the table compares SFT and PPO on this base';
      console.error(`demo: policy base ${cfg.policy.model} (found; delete the folder to remake it)\ndemo: ${note}`);
      return { code: 0 };
    }
    console.error(`demo: creating the stand-in base in ${cfg.policy.model}: random init, preset tiny, seed ${cfg.seed}, vocabulary from ${qrefVocabFiles(ctx).join(', ')}\ndemo: note: ${QREF_STAND_IN}`);
    const model = await import('../commands/model.ts');
    return { code: await model.run(['init', '--preset', 'tiny', '--out', cfg.policy.model, '--seed', String(cfg.seed), ...qrefVocabFiles(ctx).flatMap((f) => ['--vocab-from', f])]) };
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

/** Where the eval phase writes `gsteer eval`'s report of one policy on one split. */
export const qrefReportFile = (root: string, policy: 'sft' | 'ppo', split: string) => join(root, 'eval', `qref-${policy}-${split}.json`);

export const qrefEvalPhase: Phase = {
  name: 'eval',
  async run(ctx) {
    const { cfg, initAdapter } = ctx;
    const layout = runLayout(resolve(cfg.runDir, cfg.runName));
    const final = latestAdapter(layout.adapters);
    if (!final || final.version === 0) {
      console.error('demo: no PPO adapter was written; nothing to evaluate');
      return { code: 1 };
    }
    const policies = [
      ...(initAdapter ? [{ key: 'sft' as const, label: 'SFT', dir: initAdapter }] : []),
      { key: 'ppo' as const, label: `PPO ${adapterName(final.version)}`, dir: final.dir },
    ];
    const evalCmd = await import('../commands/eval.ts');
    const rows: QrefRow[] = [];
    for (const split of ['test', 'train'])
      for (const p of policies) {
        const out = qrefReportFile(layout.root, p.key, split);
        console.error(`demo: gsteer eval ${p.label} on the ${split} split -> ${out}`);
        const code = await evalCmd.run([...cliArgs(ctx), '--adapter', p.dir, '--split', split, '--label', p.label, '--out', out]);
        if (code !== 0) return { code };
        rows.push({ policy: p.label, report: JSON.parse(readFileSync(out, 'utf8')) as QrefReport });
      }
    const { samples, level } = cfg.eval.bootstrap;
    const E = cfg.eval.episodesPerInstance;
    const title = `gsteer eval (env qref): ${policies.map((p) => p.label).join(' / ')}, ${E} episode(s) per question, the same sampling seeds for every policy (temperature ${cfg.eval.temperature}); ± bootstrap SE over questions (${samples} resamples)`;
    const diffs = `Paired differences (same questions and seeds; ± SE from the same resamples; under 2 SE = within noise):\n${qrefDemoDifferences(rows, cfg.seed, samples, level) || '- none (no SFT adapter)'}`;
    const standIn = isStandInBase(cfg.policy.model);
    const note = standIn ? `Note: ${QREF_STAND_IN}.` : `Base: ${cfg.policy.model} (not the random-init stand-in).`;
    const text = `${title}\n\n${qrefDemoTable(rows)}\n\n${diffs}\n\n${note}`;
    const records = readMetrics(layout.metrics);
    const critic = metricCurves(records, ['critic/vf_loss', 'critic/vf_explained_var']);
    console.log(`\n${rewardCurves(records)}${critic ? `\n\n${critic}` : ''}`);
    console.log(`\n${text}`);
    const out = join(layout.root, 'eval', 'demo-table.md');
    writeFileAtomic(out, `${text}\n`);
    console.log(`\n${formatTrend(quarterTrend(runGroupMeans(layout.root)))}${standIn ? ' (a random stand-in base: not evidence of learning either way)' : ''}\n(table: ${out})`);
    return { code: 0 };
  },
};

export const QREF_PHASES: Phase[] = [qrefSftDataPhase, qrefModelPhase, qrefSftPhase, qrefPpoPhase, qrefEvalPhase];
