// `npm run demo` = `gsteer demo --config configs/demo.yaml`: the whole pipeline on a fresh
// machine, as phases run in order. Each phase reads the config and what earlier phases
// left (e.g. an adapter GRPO starts from). The SFT phases (method §7, cli/demo/sft-phases.ts)
// build the scaffolded examples before the model (their tokens join its vocabulary) and
// train the LoRA GRPO starts from after it.
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkNotLocked } from '../../checkpoints/run-lock.ts';
import { loadConfig } from '../../configs/load.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { sftDataPhase, sftTrainPhase } from '../demo/sft-phases.ts'; // SFT phases (data/sft/README.md)
import { baseNote, DEMO_BASE_MINUTES, remakeDemoBase } from '../demo/base.ts';
import { demoEvalPhase } from '../demo/eval-phase.ts';
import type { Phase, PhaseContext } from '../demo/phase.ts';
import { grpoRun, QREF_PHASES } from '../demo/qref-phases.ts';

export const summary = 'a complete GRPO run with the embedded defaults (tiny model, local Redis)';
export const usage = `usage: gsteer demo [--config configs/demo.yaml] [--set key=value ...] [--keep]

Runs the demo phases in order: sft-data (scaffolded SFT examples) -> model (the tiny base
policy.model, committed as models/tiny-demo; when the folder is missing it is remade with
gsteer model init --pretrain, about ${DEMO_BASE_MINUTES} min on 2 cores) -> sft (LoRA SFT with
configs/sft-demo.yaml layered on the demo config, then the valid-turn rate of sampled
held-out turns; --set sft.enabled=false skips both SFT phases) -> grpo (gsteer train with
the demo config, from the SFT adapter, with --dashboard: its URL is printed). The previous demo run directory (runDir/runName;
with env qref also its GRPO run, runName-grpo) is replaced unless --keep is given.

With env qref (gsteer demo --config configs/qref-demo.yaml; cli/demo/qref-phases.ts):
sft-data (the refiner's demonstrations as SFT examples) -> model (policy.model, committed
as models/tiny-qref; when missing, grown again with its recipe, cli/demo/qref-base.ts,
resumable stage by stage) -> sft -> select (with demo.select: the train questions to train
on, by the SFT refiner's pass rate on a seed stream of its own, cli/demo/qref-select.ts)
-> ppo (gsteer train from the SFT adapter, --dashboard)
-> grpo (the same from the same adapter with algorithm grpo, run RUN_NAME-grpo) -> eval
(gsteer eval of the SFT, PPO and GRPO adapters; table in RUN_DIR/eval/demo-table.md).`;

const PHASES: Phase[] = [
  sftDataPhase,
  {
    name: 'model',
    async run({ cfg, configFiles, sets, sftExamples }) {
      if (existsSync(join(cfg.policy.model, 'config.json'))) {
        console.error(`demo: policy base ${cfg.policy.model}${baseNote(cfg.policy.model, sftExamples)}`);
        return { code: 0 };
      }
      console.error(
        `demo: creating the tiny model in ${cfg.policy.model}${sftExamples ? ` and pretraining it (one time, about ${DEMO_BASE_MINUTES} min on 2 cores)` : ''}`,
      );
      const model = await import('./model.ts');
      if (!sftExamples) return { code: await model.run(['init', '--preset', 'tiny', '--out', cfg.policy.model, '--seed', String(cfg.seed)]) };
      return { code: await remakeDemoBase({ cfg, configFiles, sets, sftExamples }) };
    },
  },
  sftTrainPhase,
  {
    name: 'grpo',
    async run({ cfg, configFiles, sets, initAdapter }) {
      const train = await import('./train.ts');
      const args = [...configFiles.flatMap((f) => ['--config', f]), ...sets.flatMap((s) => ['--set', s]), '--dashboard'];
      const code = await train.run([...args, ...(initAdapter ? ['--init-adapter', initAdapter] : [])]);
      console.error(`demo: the dashboard of the finished run: npx gsteer monitor ${join(cfg.runDir, cfg.runName)} --serve`);
      return { code };
    },
  },
  demoEvalPhase,
];

/** Each environment's phases (configs/demo.yaml: G-STEER; configs/qref-demo.yaml: QREF). */
const PHASES_BY_ENV: Record<RunConfig['env'], Phase[]> = { gsteer: PHASES, qref: QREF_PHASES };

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: 'string', multiple: true }, set: { type: 'string', multiple: true }, keep: { type: 'boolean', default: false } },
  });
  const configFiles = values.config ?? ['configs/demo.yaml'];
  const sets = values.set ?? [];
  const cfg = loadConfig(configFiles, sets);
  // the demo's run directories: its own, and with env qref the GRPO run beside it
  const owned = [cfg.runName, ...(cfg.env === 'qref' ? [grpoRun(cfg).runName] : [])].map((name) => resolve(cfg.runDir, name));
  for (const dir of owned) checkNotLocked(dir); // a live run there is not deleted under it
  if (!values.keep) for (const dir of owned) rmSync(dir, { recursive: true, force: true });
  const ctx: PhaseContext = { cfg, configFiles, sets };
  for (const phase of PHASES_BY_ENV[cfg.env]) {
    const t0 = Date.now();
    console.error(`demo: phase ${phase.name}`);
    const r = await phase.run(ctx);
    if (r.code !== 0) {
      console.error(`demo: phase ${phase.name} failed (exit ${r.code})`);
      return r.code;
    }
    if (r.initAdapter) ctx.initAdapter = r.initAdapter;
    if (r.sftExamples) ctx.sftExamples = r.sftExamples;
    if (r.trainIds) {
      // every later phase, and every command it runs, trains and evaluates on these questions
      // (demo.select done: null, as it and grpo.trainIds are one or the other)
      ctx.sets = [...ctx.sets, 'demo.select=null', `grpo.trainIds=[${r.trainIds.join(',')}]`];
      ctx.cfg = { ...ctx.cfg, demo: { ...ctx.cfg.demo, select: null }, grpo: { ...ctx.cfg.grpo, trainIds: r.trainIds } };
    }
    console.error(`demo: phase ${phase.name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  return 0;
}
