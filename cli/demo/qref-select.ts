// The QREF demo's select phase (configs/demo-settings.ts demo.select): which train questions
// PPO and GRPO train on. The SFT refiner runs demo.select.episodes episodes on every train
// question, at the evaluation's temperature but under a seed stream of its own ('qref-select',
// eval/qref.ts seedStream), so the questions are chosen on one sample and compared on
// another: a question picked because SFT was unlucky in selection is not also scored on
// those unlucky episodes. Its rule (passRateSelect): drop questions SFT solves in every
// episode (nothing to learn, nothing to show), then take the questions whose refined recall is
// closest to 0.5 (most variance to learn from), ties in file order. Writes
// <run>/select/train-ids.json with every question's rate; later phases train and evaluate on
// the chosen ids (cli/commands/demo.ts sets grpo.trainIds).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { evaluateQref } from '../../eval/qref.ts';
import { writeFileAtomic } from '../../util/atomic.ts';
import type { Phase } from './phase.ts';

export const SELECT_STREAM = 'qref-select';

export interface QuestionRate {
  id: string;
  /** Mean refined recall over the selection episodes. */
  rate: number;
}

/**
 * The `n` questions to train on: those with rate < 1, by |rate - 0.5| ascending, ties in the
 * given order. Fewer than `n` when fewer are unsolved.
 */
export function passRateSelect(rates: readonly QuestionRate[], n: number): string[] {
  return rates
    .map((r, order) => ({ ...r, order }))
    .filter((r) => r.rate < 1)
    .sort((a, b) => Math.abs(a.rate - 0.5) - Math.abs(b.rate - 0.5) || a.order - b.order)
    .slice(0, n)
    .map((r) => r.id);
}

/** Mean refined recall per question, in order of first appearance. */
export function questionRates(episodes: readonly { questionId: string; components: Record<string, number> }[]): QuestionRate[] {
  const sums = new Map<string, { sum: number; n: number }>();
  for (const e of episodes) {
    const s = sums.get(e.questionId) ?? { sum: 0, n: 0 };
    s.sum += e.components.recall_refined ?? 0;
    s.n += 1;
    sums.set(e.questionId, s);
  }
  return [...sums].map(([id, s]) => ({ id, rate: s.sum / s.n }));
}

export const qrefSelectPhase: Phase = {
  name: 'select',
  async run({ cfg, initAdapter }) {
    const sel = cfg.demo.select;
    if (!sel) return { code: 0 };
    const ecfg = { ...cfg, eval: { ...cfg.eval, episodesPerInstance: sel.episodes } };
    const who = initAdapter ? 'the SFT refiner' : 'the base refiner (no SFT adapter)';
    console.error(`demo: select: ${who} on every train question, ${sel.episodes} episodes each (seed stream ${SELECT_STREAM}, not the evaluation's)`);
    const r = await evaluateQref(ecfg, { split: 'train', ...(initAdapter ? { adapter: initAdapter } : {}), seedStream: SELECT_STREAM });
    const rates = questionRates(r.episodes);
    const ids = passRateSelect(rates, sel.questions);
    const solved = rates.filter((q) => q.rate >= 1).length;
    if (ids.length === 0) {
      console.error(
        `demo: select: ${who} solves all ${rates.length} train questions in every episode: nothing to train on; set demo.select: null and grpo.trainIds`,
      );
      return { code: 2 };
    }
    const dir = join(cfg.runDir, cfg.runName, 'select');
    mkdirSync(dir, { recursive: true });
    const out = join(dir, 'train-ids.json');
    writeFileAtomic(out, `${JSON.stringify({ stream: SELECT_STREAM, episodes: sel.episodes, chosen: ids, rates }, null, 2)}\n`);
    const shown = ids.map((id) => `${id} ${rates.find((q) => q.id === id)!.rate.toFixed(2)}`).join(', ');
    console.error(
      `demo: select: ${solved} of ${rates.length} train questions solved in every episode (left out); training on ${ids.length}: ${shown} (${out})`,
    );
    return { code: 0, trainIds: ids };
  },
};
