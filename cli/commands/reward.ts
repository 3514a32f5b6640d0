// `gsteer reward`: score one trajectory against one instance's targets (method §4) and print
// every component as JSON. File format: reward/README.md.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { loadInstances } from '../../data/load.ts';
import { computeReward } from '../../reward/index.ts';
import { createEncoder } from '../../encoders/index.ts';
import { parseTrajectorySummary } from '../../reward/input.ts';
import { InputError } from '../../util/errors.ts';

export const summary = 'score one trajectory with the target-anchored reward and print every component';
export const usage = `usage: gsteer reward --instance FILE --id ID --trajectory FILE [--config FILE ...] [--set key=value ...]

  --instance FILE    instances JSONL (data/schema.ts); the instance with --id supplies the targets
  --id ID            instance id
  --trajectory FILE  JSON: either a small summary
                       {"finalSlots": [{"name","purpose","status",...}], "askedQuestions": [...],
                        "askCount": 2, "retrieveCount": 1, "termination": "stop"}
                     or a full Trajectory record as the rollout workers write it (reward/README.md)
  --config / --set   run config; reward.* sets the coefficients, encoder.* the sentence encoder

Prints the RewardBreakdown as JSON: reward, r_align, coverage, c_fp, c_acq, c_con, n_rep,
n_multi, t_ask, t_ret, penalty_invalid, penalty_nonstop and the matched pairs.`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      instance: { type: 'string' },
      id: { type: 'string' },
      trajectory: { type: 'string' },
      config: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
    },
  });
  for (const k of ['instance', 'id', 'trajectory'] as const) if (!values[k]) throw new InputError(`--${k} is required\n\n${usage}`);
  const cfg = loadConfig(values.config ?? [], values.set ?? []);
  const instances = loadInstances([values.instance as string]);
  const instance = instances.find((x) => x.id === values.id);
  if (!instance)
    throw new InputError(
      `${values.instance}: no instance with id "${values.id}" (it has ${instances.length} instances, e.g. ${instances
        .slice(0, 3)
        .map((x) => `"${x.id}"`)
        .join(', ')}); check --id`,
    );
  const file = values.trajectory as string;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`${file}: cannot read a JSON trajectory (${(e as Error).message}); format in reward/README.md`);
  }
  if (typeof raw === 'object' && raw !== null && 'instanceId' in raw && (raw as { instanceId: unknown }).instanceId !== instance.id)
    throw new InputError(
      `${file}: the trajectory is for instance "${String((raw as { instanceId: unknown }).instanceId)}" but --id is "${instance.id}"; pass the matching id`,
    );
  const summaryInput = parseTrajectorySummary(raw, file);
  const breakdown = await computeReward({ instanceId: instance.id, targets: instance.targets, ...summaryInput }, cfg.reward, createEncoder(cfg.encoder));
  process.stdout.write(`${JSON.stringify(breakdown, null, 2)}\n`);
  return 0;
}
