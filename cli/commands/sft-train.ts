// `gsteer sft train`: the SFT stage (trainer/sft/train.ts runSft) on the config's examples,
// or on the environment's, built first (rollout/env/sft-examples.ts) when sft.examples is unset.
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { writeEnvSftExamples } from '../../rollout/env/sft-examples.ts';
import { checkFits } from '../../trainer/plan-config.ts';
import { runSft } from '../../trainer/sft/train.ts';
import { InputError } from '../../util/errors.ts';

export async function sftTrainCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: 'string', multiple: true }, set: { type: 'string', multiple: true }, resume: { type: 'boolean' }, fresh: { type: 'boolean' } },
  });
  if (values.resume && values.fresh) throw new InputError('sft train: --resume and --fresh exclude each other; pick one');
  const cfg = loadConfig(values.config ?? [], values.set ?? []);
  // The SFT stage's memory plan against the device, refused before anything starts (trainer/plan-config.ts).
  console.error(`sft: ${checkFits(cfg, 'sft').summary}`);
  const r = await runSft(cfg, { resume: values.resume ?? false, fresh: values.fresh ?? false, writeExamples: writeEnvSftExamples });
  console.log(
    `sft: ${r.steps} updates in ${r.seconds.toFixed(1)} s; last train loss ${r.trainLoss?.toFixed(4) ?? '-'}, held-out loss ${r.heldOutLoss?.toFixed(4) ?? '-'}; adapter ${r.adapterDir}`,
  );
  return 0;
}
