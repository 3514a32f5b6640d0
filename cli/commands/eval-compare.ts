// `gsteer eval compare`: the paper's comparison tables and Figure 3 from saved results
// (eval/compare.ts). `gsteer eval` dispatches its `compare` subcommand here. A --label names
// the result file just before it, so labels and files can be read off the command line.
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { seededResampler } from '../../eval/bootstrap.ts';
import type { CompareInput } from '../../eval/compare.ts';
import { toMarkdown } from '../../eval/table.ts';
import { InputError } from '../../util/errors.ts';

export const usage = `usage: gsteer eval compare RESULT [--label NAME] [RESULT [--label NAME] ...]
                           [--ablation RESULT [--label NAME] ...] [--config FILE] [--set key=value ...]
                           [--threshold T] [--reference NAME] [--bootstrap B] [--seed S] [--out DIR]

  RESULT             a saved eval result (gsteer eval --out; a Table 2 row and a Figure 3 point)
                     or a downstream score file (format gsteer-downstream; Tables 4 and 8)
  --label NAME       the row name of the RESULT just before it (default: the result's method label)
  --ablation RESULT  a Table 3 row (an ablation run) instead of a Table 2 row
  --threshold T      cosine threshold of Tables 2, 3 and Figure 3 (default: the results' own)
  --reference NAME   Figure 3b's baseline (default: the result with baseline "direct")
  --bootstrap B      resamples of the instances for every ± SE (default eval.bootstrap.samples, 1000)
  --seed S           bootstrap seed (default: the config's seed, 42)
  --config / --set   eval.sweep (Table 9 rows), eval.bootstrap (samples, level), seed
  --out DIR          where the tables (.md, .csv) and figure3.svg / .png go
                     (default: <folder of the first RESULT>/compare)`;

const OPTIONS = {
  label: { type: 'string', multiple: true },
  ablation: { type: 'string', multiple: true },
  config: { type: 'string', multiple: true },
  set: { type: 'string', multiple: true },
  threshold: { type: 'string' },
  reference: { type: 'string' },
  bootstrap: { type: 'string' },
  seed: { type: 'string' },
  out: { type: 'string' },
} as const;

/** The result files in command-line order, each with its --label and whether it is an --ablation. */
export function files(tokens: NonNullable<ReturnType<typeof parseArgs>['tokens']>): CompareInput['files'] {
  const out: CompareInput['files'] = [];
  for (const t of tokens) {
    if (t.kind === 'positional') out.push({ file: t.value, ablation: false });
    else if (t.kind === 'option' && t.name === 'ablation') out.push({ file: t.value as string, ablation: true });
    else if (t.kind === 'option' && t.name === 'label') {
      const last = out.at(-1);
      if (!last) throw new InputError(`--label "${t.value}" comes before any result file; put it after the file it names`);
      if (last.label !== undefined) throw new InputError(`${last.file} has two labels ("${last.label}", "${t.value}"); give each file one --label`);
      last.label = t.value as string;
    }
  }
  return out;
}

function numberFlag(name: string, raw: string | undefined, ok: (x: number) => boolean, rule: string): number | undefined {
  if (raw === undefined) return undefined;
  const x = Number(raw);
  if (!ok(x)) throw new InputError(`--${name} must be ${rule} but is "${raw}"`);
  return x;
}

export async function runCompare(argv: string[]): Promise<number> {
  const { values: v, tokens } = parseArgs({ args: argv, allowPositionals: true, tokens: true, options: OPTIONS });
  const list = files(tokens);
  const cfg = loadConfig(v.config ?? [], v.set ?? []);
  const samples =
    numberFlag('bootstrap', v.bootstrap, (x) => Number.isInteger(x) && x >= 1, 'a whole number of resamples >= 1 (e.g. 1000)') ?? cfg.eval.bootstrap.samples;
  const seed = numberFlag('seed', v.seed, Number.isInteger, 'a whole number (e.g. 42)') ?? cfg.seed;
  const threshold = numberFlag('threshold', v.threshold, (x) => Number.isFinite(x) && x >= -1 && x <= 1, 'a cosine in [-1, 1] (e.g. 0.55)');
  if (!list.length) throw new InputError(`no result files given\n${usage}`);
  const out = v.out ?? join(dirname((list[0] as { file: string }).file), 'compare');
  const { compare } = await import('../../eval/compare.ts'); // vega and resvg load only for this subcommand
  const r = await compare({
    files: list,
    sweep: cfg.eval.sweep,
    out,
    ...(threshold !== undefined ? { threshold } : {}),
    ...(v.reference !== undefined ? { reference: v.reference } : {}),
    spread: { resample: seededResampler(seed, samples), samples, level: cfg.eval.bootstrap.level, seed },
  });
  for (const t of r.tables) console.log(toMarkdown(t));
  console.log(`wrote ${r.written.length} files to ${out}${r.figure ? ' (Figure 3: figure3.svg, figure3.png)' : ''}`);
  return 0;
}
