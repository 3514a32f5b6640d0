// `gsteer resume RUN_DIR`: continue a run from its newest checkpoint that verifies (sha256
// manifest, run config match), exactly where it stopped.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { newestValidCheckpoint } from '../../checkpoints/checkpoint.ts';
import { runLayout } from '../../checkpoints/layout.ts';
import { restoreRunDir } from '../../checkpoints/restore.ts';
import { loadEnvInstances } from '../../workers/prepare.ts';
import { InputError } from '../../util/errors.ts';
import { readRunConfig } from '../../configs/load.ts';
import { launchRun } from '../../workers/launch.ts';
import { readRunInfo, writeRunInfo } from '../../checkpoints/run-info.ts';
import { acquireRunLock } from '../../checkpoints/run-lock.ts';

export const summary = 'continue a GRPO run from its newest valid checkpoint';
export const usage = `usage: gsteer resume RUN_DIR

Finds the newest checkpoint under RUN_DIR/checkpoints that verifies (every file against
manifest.json's sha256; base model and LoRA shape against RUN_DIR/config.yaml), puts the
run directory back to that step (adapter versions, user states, metrics.jsonl) and
continues with the same config. A corrupted or incomplete checkpoint is reported and the
next older one is tried. Same seed + config + checkpoint = the same updates as an
uninterrupted run. Refused while another command (a live train or resume) holds RUN_DIR.`;

export async function run(argv: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: {} });
  if (positionals.length !== 1) throw new InputError(`expected one RUN_DIR, got ${positionals.length}\n${usage}`);
  const layout = runLayout(resolve(positionals[0] as string));
  const info = readRunInfo(layout); // first: a clear error when RUN_DIR is not a run directory
  const cfg = readRunConfig(layout.config);
  // Before anything in RUN_DIR changes: a live train or resume there is refused, named.
  const lock = acquireRunLock(layout.root, 'resume');
  try {
    const ckpt = newestValidCheckpoint(layout, cfg, (m) => console.error(`gsteer resume: ${m}`));
    if (!ckpt)
      throw new InputError(
        `${layout.checkpoints}: no valid checkpoint to resume from (the run stopped before its first one, every checkpoint.every = ${cfg.checkpoint.every} updates); remove the run directory (rm -r ${layout.root}) and start it again with gsteer train`,
      );
    const instances = loadEnvInstances(cfg); // method §13: the run's environment
    const states = restoreRunDir(layout, ckpt);
    const next = { ...info, epoch: info.epoch + 1 };
    writeRunInfo(layout, next);
    console.error(`gsteer resume: continuing ${layout.root} from checkpoint step ${ckpt.state.step} (epoch ${next.epoch})`);
    return await launchRun({ cfg, layout, info: next, instances, userStates: { kind: 'restore', records: states }, startStep: ckpt.state.step });
  } finally {
    lock.release();
  }
}
