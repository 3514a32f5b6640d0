// Reading the files `gsteer eval compare` takes: saved eval results (`gsteer-eval` v1 or
// v2, eval/report.ts) and downstream score files (`gsteer-downstream` v1,
// eval/downstream-scores.ts), told apart by their `format`. Only what compare reads is
// checked, and an eval result's saved pooled counts must be what its own episodes give
// (a file edited by hand or cut short is refused rather than tabled).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { formatIssues } from '../configs/load.ts';
import { EVAL_GROUPS } from '../data/splits.ts';
import { InputError } from '../util/errors.ts';
import { DownstreamScoresSchema, type DownstreamScores } from './downstream-scores.ts';
import { ZERO_COUNTS, type PooledCounts } from './metrics.ts';
import { thresholdResult } from './report.ts';
import type { ScoredEpisode } from './score.ts';

const cos = z.number().nullable();
const count = z.number().int().min(0);

const EvalResultSchema = z
  .object({
    format: z.literal('gsteer-eval'),
    v: z.union([z.literal(1), z.literal(2)]),
    method: z
      .object({
        baseline: z.string(),
        label: z.string(),
        model: z.string().nullable(),
        source: z.enum(['episodes', 'trajectories']),
        adapter: z.string().optional(),
      })
      .loose(),
    encoder: z.string(),
    extractor: z.string(),
    threshold: z.number(),
    results: z.array(z.object({ threshold: z.number(), overall: z.record(z.string(), z.unknown()) }).loose()).min(1),
    episodes: z.array(
      z
        .object({
          instanceId: z.string().min(1),
          group: z.enum(EVAL_GROUPS).nullable(),
          termination: z.enum(['stop', 'invalid', 'max_turns']),
          refinedQuery: z.string().nullable(),
          askCount: count,
          retrieveCount: count,
          factors: z.array(z.object({ text: z.string(), bestCosine: cos, bestTarget: z.string().nullable() }).loose()),
          targets: z.array(
            z.object({ id: z.string(), weight: z.number().min(0), essential: z.boolean(), bestCosine: cos, bestFactor: z.string().nullable() }).loose(),
          ),
        })
        .loose(),
    ),
  })
  .loose();

export type EvalResult = z.infer<typeof EvalResultSchema> & { episodes: ScoredEpisode[] };

export type ResultFile = { kind: 'eval'; file: string; result: EvalResult } | { kind: 'downstream'; file: string; scores: DownstreamScores };

const COUNT_KEYS = Object.keys(ZERO_COUNTS) as (keyof PooledCounts)[];

function parse<T>(schema: z.ZodType<T>, raw: unknown, file: string, what: string): T {
  const r = schema.safeParse(raw);
  if (!r.success) {
    const problems = formatIssues(r.error.issues, raw, file);
    throw new InputError(`${file} is not a valid ${what}:\n  ${problems.join('\n  ')}`, problems);
  }
  return r.data;
}

/** The saved pooled counts of `overall` at every saved threshold equal what the episodes give. */
function checkCounts(r: EvalResult, file: string): void {
  for (const [k, saved] of r.results.entries()) {
    const again = thresholdResult(r.episodes, saved.threshold).overall;
    for (const key of COUNT_KEYS)
      if (saved.overall[key] !== again[key])
        throw new InputError(
          `${file}: results.${k}.overall.${key} = ${JSON.stringify(saved.overall[key])} but its episodes pool to ${again[key]} (threshold ${saved.threshold}); the file was edited or cut short: evaluate again with gsteer eval`,
        );
  }
}

function checkScores(s: DownstreamScores, file: string): void {
  const names = s.methods.map((m) => m.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new InputError(`${file}: methods name "${dup}" twice; every method needs its own name`);
  if (s.methods.filter((m) => m.original).length > 1)
    throw new InputError(`${file}: more than one method has original: true; only the unrefined query is the original`);
  const seen = new Set<string>();
  for (const [i, r] of s.scores.entries()) {
    if (!names.includes(r.method))
      throw new InputError(`${file}: scores.${i}.method = "${r.method}" is not in methods (${names.join(', ')}); add it to methods or fix the name`);
    const key = JSON.stringify([r.instanceId, r.method, r.episode]);
    if (seen.has(key))
      throw new InputError(
        `${file}: scores.${i} repeats instance "${r.instanceId}", method "${r.method}", episode ${r.episode}; one record per report (its rounds inside it)`,
      );
    seen.add(key);
  }
}

export function readResultFile(file: string): ResultFile {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`${file}: cannot read a JSON result (${(e as Error).message}); pass files written by gsteer eval (--out) or gsteer eval downstream`);
  }
  const format = (raw as { format?: unknown } | null)?.format;
  if (format === 'gsteer-eval') {
    const result = parse(EvalResultSchema, raw, file, 'gsteer eval result') as EvalResult;
    checkCounts(result, file);
    return { kind: 'eval', file, result };
  }
  if (format === 'gsteer-downstream') {
    const scores = parse(DownstreamScoresSchema, raw, file, 'downstream score file');
    checkScores(scores, file);
    return { kind: 'downstream', file, scores };
  }
  throw new InputError(
    `${file}: format = ${JSON.stringify(format)}; expected "gsteer-eval" (gsteer eval --out) or "gsteer-downstream" (gsteer eval downstream)`,
  );
}
