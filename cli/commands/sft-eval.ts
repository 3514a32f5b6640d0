// `gsteer sft eval`: flags and printing around the SFT turn eval (eval/sft-turns.ts).
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { evalOptionsOf, evalValidTurns, formatEval } from '../../eval/sft-turns.ts';
import { InputError } from '../../util/errors.ts';

export async function sftEvalCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string' },
      adapter: { type: 'string' },
      examples: { type: 'string' },
      n: { type: 'string' },
      seed: { type: 'string' },
      config: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
      show: { type: 'string' },
    },
  });
  const cfg = loadConfig(values.config ?? [], values.set ?? []);
  if (!values.examples) throw new InputError('sft eval: --examples FILE is required (the JSONL `gsteer sft build` wrote)');
  const int = (name: string, v: string | undefined, def: number) => {
    const x = v === undefined ? def : Number(v);
    if (!Number.isInteger(x) || x < 0) throw new InputError(`sft eval: --${name} ${v} must be a non-negative integer`);
    return x;
  };
  const r = await evalValidTurns(
    evalOptionsOf(cfg, {
      model: values.model,
      adapter: values.adapter ?? null,
      examples: values.examples,
      n: int('n', values.n, 64),
      seed: int('seed', values.seed, cfg.seed),
    }),
  );
  for (const s of r.samples.slice(0, int('show', values.show, 0))) console.log(`--- ${s.trajectoryId} step ${s.step} ${s.ok ? 'valid' : 'INVALID'}\n${s.text}`);
  console.log(formatEval(r));
  return 0;
}
