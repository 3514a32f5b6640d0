// The demo's last phase: did SFT and GRPO change what the policy does? The base alone, the
// SFT adapter GRPO started from and the final GRPO adapter, each evaluated (method §8,
// `gsteer eval`) on the train and the test split with eval.episodesPerInstance seeded
// episodes per instance and the same sampling seeds for every policy (with grpo.trainIds, the
// train split's rows are those instances only). Every pooled metric with its bootstrap SE over
// instances, then the paired differences SFT - base and GRPO - SFT with their paired SE and a
// plain verdict (under 2 SE: within noise); then the reward curve of the run and the
// first-vs-last-quarter trend (monitor/learning.ts).
import { existsSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { adapterDirName, adapterName, numberedName, runLayout } from '../../checkpoints/layout.ts';
import { writeFileAtomic } from '../../util/atomic.ts';
import { join } from 'node:path';
import type { RunConfig } from '../../configs/schema.ts';
import { seededResampler, type Estimate } from '../../eval/bootstrap.ts';
import { pairedDifference, verdict } from '../../eval/paired.ts';
import type { ScoredEpisode } from '../../eval/score.ts';
import { viewResult, type ViewResult } from '../../eval/spread.ts';
import { formatTrend, quarterTrend, runGroupMeans } from '../../monitor/learning.ts';
import { readMetrics } from '../../monitor/sink.ts';
import { rewardCurves } from '../../monitor/terminal-curve.ts';
import type { PhaseContext } from './phase.ts';
import { evaluate } from '../../eval/evaluate.ts';

/** The newest adapter version the trainer wrote, or null. */
export function latestAdapter(adaptersDir: string): { version: number; dir: string } | null {
  if (!existsSync(adaptersDir)) return null;
  const versions = readdirSync(adaptersDir)
    .map((n) => numberedName(n, 'policy-v'))
    .filter((v): v is number => v !== null);
  if (!versions.length) return null;
  const version = Math.max(...versions);
  return { version, dir: resolve(adaptersDir, adapterDirName(version)) };
}

interface Row {
  policy: string;
  set: string;
  v: ViewResult;
}

const pm = (e: Estimate, d = 4) => (e.value === null ? 'n/a' : `${e.value.toFixed(d)} ± ${e.se === null ? 'n/a' : e.se.toFixed(d)}`);

/** The final table: one row per policy and instance set, every metric ± its bootstrap SE over instances. */
export function demoTable(rows: readonly Row[]): string {
  const head = '| policy | instances | episodes | WCov | E-WCov | F1 | Ask | Ret. | valid Stops |';
  const line = ({ policy, set, v }: Row) =>
    `| ${policy} | ${set} (${v.instances.length}) | ${v.metrics.episodes} | ${pm(v.est.wcov)} | ${pm(v.est.ewcov)} | ${pm(v.est.f1)} | ${pm(v.est.meanAsk, 2)} | ${pm(v.est.meanRetrieve, 2)} | ${v.metrics.stopped}/${v.metrics.episodes} |`;
  return [head, '|---|---|---|---|---|---|---|---|---|', ...rows.map(line)].join('\n');
}

/** Per set, each policy against the one before it (SFT - base, GRPO - SFT): paired differences with a verdict. */
export function demoDifferences(rows: readonly Row[], level: number): string {
  const out: string[] = [];
  const sets = [...new Set(rows.map((r) => r.set))];
  for (const set of sets) {
    const rs = rows.filter((r) => r.set === set);
    for (let i = 1; i < rs.length; i++) {
      const [a, b] = [rs[i - 1] as Row, rs[i] as Row];
      const d = (k: 'wcov' | 'ewcov' | 'f1') => verdict(pairedDifference(a.v, b.v, k, level));
      out.push(`- ${set}: ${b.policy} - ${a.policy}: WCov ${d('wcov')}; E-WCov ${d('ewcov')}; F1 ${d('f1')}`);
    }
  }
  return out.join('\n');
}

async function episodesOf(cfg: RunConfig, adapter: string | undefined, split: string, ids?: readonly string[]): Promise<ScoredEpisode[]> {
  const { report } = await evaluate(cfg, { ...(adapter ? { adapter } : {}), split, ...(ids ? { ids: [...ids] } : {}) }, (l) =>
    console.error(`gsteer eval: ${l}`),
  );
  return report.episodes;
}

export const demoEvalPhase = {
  name: 'eval',
  async run({ cfg, initAdapter }: PhaseContext): Promise<{ code: number }> {
    const layout = runLayout(resolve(cfg.runDir, cfg.runName));
    console.log(`\n${rewardCurves(readMetrics(layout.metrics))}`);
    const trend = quarterTrend(runGroupMeans(layout.root));
    const final = latestAdapter(layout.adapters);
    if (!final || final.version === 0) {
      console.error('demo: no GRPO adapter was written; nothing to evaluate');
      return { code: 1 };
    }
    const policies = [
      { label: 'base', dir: undefined },
      ...(initAdapter ? [{ label: 'SFT', dir: initAdapter }] : []),
      { label: `GRPO ${adapterName(final.version)}`, dir: final.dir },
    ];
    const tau = cfg.eval.threshold;
    const { samples, level } = cfg.eval.bootstrap;
    const resample = seededResampler(cfg.seed, samples); // same instances -> same resamples: paired
    const rows: Row[] = [];
    // With grpo.trainIds, the train split's rows are the instances GRPO trained on (the others
    // are only evaluated without it: GRPO never saw them, and the 15-minute budget goes to updates).
    const ids = cfg.grpo.trainIds;
    const perPolicy = new Map<string, { train: ScoredEpisode[]; test: ScoredEpisode[] }>();
    for (const p of policies) perPolicy.set(p.label, { train: await episodesOf(cfg, p.dir, 'train', ids), test: await episodesOf(cfg, p.dir, 'test') });
    const sets: { name: string; pick: (e: { train: ScoredEpisode[]; test: ScoredEpisode[] }) => ScoredEpisode[] }[] = [
      { name: ids ? `train, GRPO's ${ids.length}` : 'train', pick: (e) => e.train },
      { name: 'test', pick: (e) => e.test },
    ];
    for (const set of sets)
      for (const p of policies)
        rows.push({ policy: p.label, set: set.name, v: viewResult(set.pick(perPolicy.get(p.label)!), tau, 'overall', resample, level) });
    const E = cfg.eval.episodesPerInstance;
    const title = `gsteer eval: ${policies.map((p) => p.label).join(' / ')}, ${E} episode(s) per instance, the same sampling seeds for every policy (threshold ${tau}, temperature ${cfg.eval.temperature}); ± bootstrap SE over instances (${samples} resamples)`;
    const diffs = `Paired differences (same instances and seeds; ± SE from the same resamples; under 2 SE = within noise):\n${demoDifferences(rows, level)}`;
    const text = `${title}\n\n${demoTable(rows)}\n\n${diffs}`;
    console.log(`\n${text}`);
    const out = join(layout.root, 'eval', 'demo-table.md');
    writeFileAtomic(out, `${text}\n`);
    console.log(`\n${formatTrend(trend)}\n(table: ${out})`);
    return { code: 0 };
  },
};
