// The demo's last phase: did GRPO change what the policy does? The SFT adapter GRPO started
// from and the final GRPO adapter, each evaluated (method §8, `gsteer eval`) on the train and
// the test split (and first on the grpo.trainIds subset, when set) with the same sampling
// seeds, side by side; then the reward curve of the
// run and the first-vs-last-quarter trend (monitor/learning.ts).
import { existsSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { adapterDirName, adapterName, numberedName, runLayout } from '../../checkpoints/layout.ts';
import { formatSideBySide } from '../../eval/report.ts';
import { formatTrend, quarterTrend, runGroupMeans } from '../../monitor/learning.ts';
import { readMetrics } from '../../monitor/sink.ts';
import { rewardCurves } from '../../monitor/terminal-curve.ts';
import type { PhaseContext } from './phase.ts';
import { evaluate } from '../commands/eval.ts';

/** The newest adapter version the trainer wrote, or null. */
function latestAdapter(adaptersDir: string): { version: number; dir: string } | null {
  if (!existsSync(adaptersDir)) return null;
  const versions = readdirSync(adaptersDir).map((n) => numberedName(n, 'policy-v')).filter((v): v is number => v !== null);
  if (!versions.length) return null;
  const version = Math.max(...versions);
  return { version, dir: resolve(adaptersDir, adapterDirName(version)) };
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
      ...(initAdapter ? [{ label: 'SFT', dir: initAdapter }] : []),
      { label: `GRPO ${adapterName(final.version)}`, dir: final.dir },
    ];
    // With grpo.trainIds, the instances GRPO trained on come first, then the whole splits.
    const sets = [
      ...(cfg.grpo.trainIds ? [{ name: `train, GRPO's ${cfg.grpo.trainIds.length}`, split: 'train', ids: cfg.grpo.trainIds }] : []),
      { name: 'train', split: 'train' },
      { name: 'test', split: 'test' },
    ];
    const rows = [];
    for (const set of sets)
      for (const p of policies) {
        const { report, tau } = await evaluate(cfg, { adapter: p.dir, split: set.split, ...(set.ids ? { ids: set.ids } : {}) });
        const main = report.results.find((r) => r.threshold === tau)!;
        rows.push({ label: p.label, split: set.name, m: main.overall });
      }
    console.log(`\ngsteer eval, same seeds for every row (threshold ${cfg.eval.threshold}, temperature ${cfg.eval.temperature}):`);
    console.log(formatSideBySide(rows));
    console.log(`\n${formatTrend(trend)}`);
    return { code: 0 };
  },
};
