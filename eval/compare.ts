// `gsteer eval compare RESULT...`: read saved eval results and downstream score files, build
// the paper-shaped tables (eval/compare-tables.ts) and Figure 3 (eval/figure3.ts), and write
// each as markdown + CSV (the figure as SVG, PNG and its Vega-Lite spec) into one folder,
// by default `<folder of the first result>/compare`, i.e. runs/<run>/eval/compare for
// results saved where `gsteer eval` puts them: the dashboard serves that folder.
import { mkdirSync } from 'node:fs';
import { writeFileAtomic } from '../util/atomic.ts';
import { join } from 'node:path';
import { InputError } from '../util/errors.ts';
import { buildTables, type Method, type Spread } from './compare-tables.ts';
import type { DownstreamScores } from './downstream-scores.ts';
import { figure3Data, figure3Spec, figure3Table } from './figure3.ts';
import { renderSvg, svgToPng } from './render-figure.ts';
import { readResultFile } from './result-file.ts';
import { toCsv, toMarkdown, type Table } from './table.ts';

export interface CompareInput {
  files: { file: string; label?: string; ablation: boolean }[]; // command-line order
  threshold?: number; // default: the results' own main threshold (they must agree)
  sweep: readonly number[]; // Table 9 rows (eval.sweep)
  reference?: string; // Figure 3b's baseline; default: the result with baseline "direct"
  spread: Spread;
  out: string;
}

export interface CompareOutput {
  tables: Table[];
  figure: boolean; // figure3.svg / .png written
  written: string[];
}

function load(input: CompareInput): { methods: Method[]; ablations: Method[]; downstream: DownstreamScores[] } {
  const methods: Method[] = [];
  const ablations: Method[] = [];
  const downstream: DownstreamScores[] = [];
  for (const { file, label, ablation } of input.files) {
    const r = readResultFile(file);
    if (r.kind === 'downstream') {
      if (label !== undefined || ablation)
        throw new InputError(`${file} is a downstream score file: its method names come from the file; drop --label / --ablation for it`);
      downstream.push(r.scores);
      continue;
    }
    (ablation ? ablations : methods).push({ name: label ?? r.result.method.label, file, result: r.result });
  }
  for (const [list, what] of [
    [methods, 'results'],
    [ablations, '--ablation results'],
  ] as const) {
    const names = list.map((m) => m.name);
    const dup = list.find((m, i) => names.indexOf(m.name) !== i);
    if (dup)
      throw new InputError(
        `two ${what} are both named "${dup.name}" (${list
          .filter((m) => m.name === dup.name)
          .map((m) => m.file)
          .join(', ')}); name them apart with --label after each file`,
      );
  }
  const agents = downstream.map((d) => d.agent.name);
  const twice = agents.find((a, i) => agents.indexOf(a) !== i);
  if (twice) throw new InputError(`two downstream score files are for the agent "${twice}"; pass one file per deep-research agent`);
  return { methods, ablations, downstream };
}

function mainThreshold(all: readonly Method[], given: number | undefined): number {
  if (given !== undefined) return given;
  const taus = [...new Set(all.map((m) => m.result.threshold))];
  if (taus.length > 1)
    throw new InputError(
      `the results were evaluated at different main thresholds (${all.map((m) => `${m.file}: ${m.result.threshold}`).join(', ')}); pass --threshold T to table them at one`,
    );
  return taus[0] ?? 0.55;
}

function referenceOf(methods: readonly Method[], name: string | undefined): Method | null {
  if (name === undefined) return methods.find((m) => m.result.method.baseline === 'direct') ?? null;
  const m = methods.find((x) => x.name === name);
  if (!m) throw new InputError(`--reference "${name}" names no result (results: ${methods.map((x) => x.name).join(', ')})`);
  return m;
}

export async function compare(input: CompareInput): Promise<CompareOutput> {
  if (input.files.length === 0) throw new InputError('gsteer eval compare needs at least one result file (gsteer eval --out, or a downstream score file)');
  const { methods, ablations, downstream } = load(input);
  const tau = mainThreshold([...methods, ...ablations], input.threshold);
  const { tables, intrinsic } = buildTables({ methods, ablations, downstream, tau, sweep: input.sweep, spread: input.spread });
  mkdirSync(input.out, { recursive: true });
  const written: string[] = [];
  const write = (name: string, data: string | Buffer) => {
    writeFileAtomic(join(input.out, name), data);
    written.push(join(input.out, name));
  };
  let figure = false;
  if (methods.length) {
    const f = figure3Data(methods, tau, intrinsic, referenceOf(methods, input.reference));
    tables.push(figure3Table(f, tau));
    const spec = figure3Spec(f, tau);
    const svg = await renderSvg(spec);
    write('figure3.vl.json', `${JSON.stringify(spec, null, 2)}\n`);
    write('figure3.svg', svg);
    write('figure3.png', svgToPng(svg));
    figure = true;
  }
  for (const t of tables) {
    write(`${t.id}.md`, toMarkdown(t));
    write(`${t.id}.csv`, toCsv(t));
  }
  return { tables, figure, written };
}
