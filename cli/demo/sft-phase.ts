// The SFT phase of a run (`gsteer train` / `npm run demo` with sft.enabled): train the
// LoRA on scaffolded examples (trainer/sft/train.ts), then sample cfg.sft.evalTurns held-out
// turns and report the share that parse as valid turns. GRPO then starts from the adapter
// (the caller sets initAdapter to `adapterDir`).
import type { RunConfig } from '../../configs/schema.ts';
import { writeEnvSftExamples } from '../../rollout/env/sft-examples.ts';
import { runSft, type SftRunResult } from '../../trainer/sft/train.ts';
import { evalOptionsOf, evalValidTurns, formatEval, type EvalResult } from '../../eval/sft-turns.ts';

export interface SftPhaseResult {
  adapterDir: string;
  train: SftRunResult;
  eval: EvalResult | null;
}

export interface SftPhaseOptions {
  resume?: boolean;
  /** Also sample the same held-out turns from the base alone (no adapter) first, to show what SFT changed. */
  baseline?: boolean;
  log?: (line: string) => void;
}

export async function sftPhase(cfg: RunConfig, o: SftPhaseOptions = {}): Promise<SftPhaseResult> {
  const log = o.log ?? ((l: string) => console.error(l));
  const train = await runSft(cfg, { resume: o.resume ?? false, fresh: !o.resume, log, writeExamples: writeEnvSftExamples });
  log(
    `sft: ${train.steps} updates in ${train.seconds.toFixed(1)} s; train loss ${train.trainLoss?.toFixed(4) ?? '-'}, held-out loss ${train.heldOutLoss?.toFixed(4) ?? '-'}; adapter ${train.adapterDir}`,
  );
  if (train.heldOutLossBefore !== null && train.heldOutLoss !== null)
    log(
      `sft: held-out loss per target token, the same ${Math.min(cfg.sft.evalMaxExamples, train.heldOutExamples)} examples: base alone ${train.heldOutLossBefore.toFixed(5)} -> after SFT ${train.heldOutLoss.toFixed(5)} ` +
        `(${train.heldOutLoss - train.heldOutLossBefore >= 0 ? '+' : ''}${(train.heldOutLoss - train.heldOutLossBefore).toFixed(5)})${cfg.sft.evalTurns ? '; the valid-turn rate below is sampled without the grammar, which GRPO and eval always apply' : ''}`,
    );
  if (cfg.env === 'qref' && cfg.sft.evalTurns > 0)
    log('sft: the valid-turn check samples G-STEER turns; skipped for env qref (gsteer eval measures the refiner, method §13)');
  if (cfg.sft.evalTurns === 0 || cfg.env === 'qref') return { adapterDir: train.adapterDir, train, eval: null };
  // The same seeded held-out sample and sampling seeds for both, so the rates compare turn for turn.
  const evalWith = async (adapter: string | null, what: string) => {
    const t0 = performance.now();
    const ev = await evalValidTurns(evalOptionsOf(cfg, { adapter, examples: train.examplesFile, n: cfg.sft.evalTurns, seed: cfg.seed }));
    log(`sft: ${what}: ${formatEval(ev)} at temperature ${cfg.rollout.temperature} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    return ev;
  };
  if (o.baseline) await evalWith(null, 'base model alone');
  const ev = await evalWith(train.adapterDir, 'after SFT');
  return { adapterDir: train.adapterDir, train, eval: ev };
}
