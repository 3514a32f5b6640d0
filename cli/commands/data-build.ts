// `gsteer data build` and `gsteer data split` (data/raw/README.md, data/build/README.md).
import { parseArgs } from 'node:util';
import { writeFileAtomic } from '../../util/atomic.ts';
import { InputError } from '../../util/errors.ts';
import { PROMPTS, SYSTEM, STEP_NAMES } from '../../data/build/prompts.ts';
import { placementsFor, readRaw, runBuild } from '../../data/build/run.ts';
import { PAPER_SPLIT, type Placement, type SplitOptions } from '../../data/build/split.ts';
import { EVAL_GROUPS } from '../../data/splits.ts';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkOutDir, checkOutFile } from '../out-path.ts';
import { BUILD_EXTRAS, MANIFEST, readBuildManifest, SET_FILES } from '../../data/build/output-set.ts';

export const buildUsage = `usage: gsteer data build RAW_DIR --out DIR [--seed N] [split options]
           [--llm-base-url URL --llm-model NAME [--llm-api-key-env VAR] [--concurrency N]
            [--max-retries N] [--timeout-ms MS] [--max-tokens N]
            [--response-format json_schema|json_object|none]]
           [--dry-run] [--show-prompts] [--force]
       gsteer data split RAW_DIR [--seed N] [split options] [--out FILE]

build  RAW_DIR holds tasks.jsonl, users.jsonl, pairs.jsonl (data/raw/README.md). Writes
       DIR/instances.jsonl, DIR/user_states.jsonl (offline SFT state), DIR/build_report.json
       (every candidate target kept or dropped with its reason, the split, failures).
       Without --llm-* every step runs its embedded rule (data/build/README.md); with them
       every step asks the endpoint under its JSON schema, each request cached in DIR/cache
       (a re-run sends nothing). The three files are written as one set, DIR/manifest.json
       last (their sha256); DIR may be new, empty, or an earlier build of the same RAW_DIR
       (it is rebuilt, its cache reused); another build's folder, or one holding other
       files, needs --force, which says what it replaces (the other build's files and cache;
       other files stay). --dry-run prints the calls a build would make; --show-prompts
       prints every step's system prompt and the first pair's messages.
split  The paper's Table 1 protocol: held-out users and tasks drawn by --seed, 70/30
       with seen / unseen_user / unseen_task / both_unseen test groups. Prints the table;
       --out writes one {id, userId, taskId, split, group} per line.
split options: --test-fraction ${PAPER_SPLIT.testFraction} --held-out-users ${PAPER_SPLIT.heldOutUsers} --held-out-tasks ${PAPER_SPLIT.heldOutTasks} --min-seen ${PAPER_SPLIT.minSeen} (defaults)`;

const SPLIT_OPTS = {
  seed: { type: 'string' },
  'test-fraction': { type: 'string' },
  'held-out-users': { type: 'string' },
  'held-out-tasks': { type: 'string' },
  'min-seen': { type: 'string' },
  out: { type: 'string' },
} as const;

function num(flag: string, v: string | undefined, fallback: number, rule: (x: number) => boolean, what: string): number {
  if (v === undefined) return fallback;
  const x = Number(v);
  if (!Number.isFinite(x) || !rule(x)) throw new InputError(`--${flag} ${v}: must be ${what}`);
  return x;
}

function splitOptions(v: Record<string, string | boolean | undefined>): SplitOptions {
  const s = (k: string) => v[k] as string | undefined;
  const share = (x: number) => x >= 0 && x <= 1;
  return {
    seed: num('seed', s('seed'), 42, Number.isInteger, 'an integer'),
    testFraction: num('test-fraction', s('test-fraction'), PAPER_SPLIT.testFraction, share, 'in [0, 1]'),
    heldOutUsers: num('held-out-users', s('held-out-users'), PAPER_SPLIT.heldOutUsers, share, 'in [0, 1]'),
    heldOutTasks: num('held-out-tasks', s('held-out-tasks'), PAPER_SPLIT.heldOutTasks, share, 'in [0, 1]'),
    minSeen: num('min-seen', s('min-seen'), PAPER_SPLIT.minSeen, (x) => Number.isInteger(x) && x >= 0, 'an integer >= 0'),
  };
}

/** The Table 1 view of a split: instances per split and per test group. */
export function splitTable(p: readonly Placement[]): string {
  const n = (f: (x: Placement) => boolean) => p.filter(f).length;
  const pct = (k: number) => `${((100 * k) / Math.max(1, p.length)).toFixed(0)}%`;
  const train = n((x) => x.split === 'train');
  const test = p.length - train;
  return [
    `split          instances`,
    `train          ${train} (${pct(train)})`,
    `test           ${test} (${pct(test)})`,
    ...EVAL_GROUPS.map((g) => `  ${g.padEnd(12)} ${n((x) => x.group === g)}`),
    `total          ${p.length}`,
  ].join('\n');
}

/** Files a data build writes (its set, manifest, cache, call records) and temps it may leave. */
const isBuildFile = (name: string) => [...SET_FILES, MANIFEST, ...BUILD_EXTRAS].includes(name as never) || /\.tmp-\d+-[0-9a-f]{8}$/.test(name);

/**
 * --out for data build: refused when it is a file or the raw folder; an earlier build of
 * the same raw folder (or one stopped before its manifest) is rebuilt; another build's
 * folder or one holding other files needs --force, which removes that build's files only.
 */
function prepareOut(out: string, raw: string, force: boolean): void {
  const manifest = () => readBuildManifest(out);
  const rule = {
    what: `data build of ${raw}`,
    inputs: [raw],
    ownOutput: (d: string) => (manifest() ? manifest()!.raw === resolve(raw) : readdirSync(d).every(isBuildFile)),
    holds: () => (manifest() ? `the build of ${manifest()!.raw}` : null),
    fix: 'give a new or empty folder, or pass --force to replace the build files there (other files stay)',
  };
  try {
    return void checkOutDir(out, rule);
  } catch (e) {
    if (!force || !existsSync(out) || !statSync(out).isDirectory()) throw e;
    checkOutDir(out, { ...rule, ownOutput: () => true }); // --force still refuses a file or the raw folder itself
  }
  const replaced = readdirSync(out).filter((n) => [...SET_FILES, MANIFEST, ...BUILD_EXTRAS].includes(n as never));
  const whose = manifest() && manifest()!.raw !== resolve(raw) ? ` (the build of ${manifest()!.raw})` : '';
  console.error(`data build: --force: replacing ${replaced.length ? replaced.map((n) => join(out, n)).join(', ') : 'nothing (no build files there)'}${whose}`);
  for (const n of replaced) rmSync(join(out, n), { recursive: true, force: true });
}

export async function split(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: SPLIT_OPTS });
  if (positionals.length !== 1) throw new InputError(`data split: give one RAW_DIR\n${buildUsage}`);
  if (values.out) checkOutFile(values.out, [positionals[0] as string]);
  const placements = placementsFor(readRaw(positionals[0] as string), splitOptions(values));
  console.log(splitTable(placements));
  if (values.out) {
    writeFileAtomic(values.out, placements.map((x) => `${JSON.stringify(x)}\n`).join(''));
    console.log(`wrote ${values.out}`);
  }
  return 0;
}

export async function build(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...SPLIT_OPTS,
      'llm-base-url': { type: 'string' },
      'llm-model': { type: 'string' },
      'llm-api-key-env': { type: 'string' },
      concurrency: { type: 'string' },
      'max-retries': { type: 'string' },
      'timeout-ms': { type: 'string' },
      'max-tokens': { type: 'string' },
      'response-format': { type: 'string' },
      'dry-run': { type: 'boolean' },
      'show-prompts': { type: 'boolean' },
      force: { type: 'boolean' },
    },
  });
  if (values['show-prompts']) {
    for (const step of STEP_NAMES) console.log(`== ${step} (system)\n${SYSTEM[step]}\n`);
    if (positionals[0]) {
      const first = readRaw(positionals[0]).pairs[0];
      if (first) console.log(`== candidates (user) for ${first.id}\n${PROMPTS.candidates(first)[1]?.content}`);
    }
    return 0;
  }
  if (positionals.length !== 1 || !values.out) throw new InputError(`data build: give one RAW_DIR and --out DIR\n${buildUsage}`);
  if (!values['dry-run']) prepareOut(values.out, positionals[0] as string, values.force ?? false);
  const baseUrl = values['llm-base-url'];
  if (Boolean(baseUrl) !== Boolean(values['llm-model']))
    throw new InputError('data build: --llm-base-url and --llm-model go together (or neither, for the embedded rules)');
  const format = values['response-format'] ?? 'json_schema';
  if (!['json_schema', 'json_object', 'none'].includes(format)) throw new InputError(`--response-format ${format}: must be json_schema, json_object or none`);
  const llm = baseUrl
    ? {
        baseUrl,
        model: values['llm-model'] as string,
        apiKeyEnv: values['llm-api-key-env'] ?? 'GSTEER_BUILDER_API_KEY',
        concurrency: num('concurrency', values.concurrency, 8, (x) => Number.isInteger(x) && x >= 1, 'an integer >= 1'),
        maxRetries: num('max-retries', values['max-retries'], 4, (x) => Number.isInteger(x) && x >= 0, 'an integer >= 0'),
        timeoutMs: num('timeout-ms', values['timeout-ms'], 120_000, (x) => x > 0, '> 0'),
        responseFormat: format as 'json_schema' | 'json_object' | 'none',
        chatTemplateKwargs: /qwen3/i.test(values['llm-model'] ?? '') ? { enable_thinking: false } : null,
      }
    : undefined;
  const maxTokens = num('max-tokens', values['max-tokens'], 2048, (x) => Number.isInteger(x) && x >= 1, 'an integer >= 1'); // per reply (llmSteps' default)
  const s = await runBuild({
    raw: positionals[0] as string,
    out: values.out,
    split: splitOptions(values),
    llm: llm && { ...llm, maxTokens },
    dryRun: values['dry-run'],
  });
  if (values['dry-run']) {
    console.log(
      `${llm ? 'LLM' : 'rule'} build of ${s.placements.length} pairs: ${s.planned.candidates} candidates calls (one per distinct query and rubric) + ${s.planned.perPair} step calls (4 per pair) + ${s.planned.profiles} profile calls = at most ${s.planned.total} calls${llm ? ' (fewer when cached in DIR/cache)' : ' (embedded rules: no endpoint is called)'}`,
    );
    console.log(splitTable(s.placements));
    return 0;
  }
  const r = s.result!;
  const targets = r.instances.reduce((a, i) => a + i.targets.length, 0);
  console.log(`built ${r.instances.length} of ${s.placements.length} instances (${targets} targets), ${r.userStates.length} user states -> ${values.out}`);
  if (llm)
    console.log(
      `LLM calls: ${s.calls.sent} sent, ${s.calls.cached} cached, ${s.calls.failed} failed attempts; tokens ${s.calls.promptTokens} prompt + ${s.calls.completionTokens} completion`,
    );
  console.log(splitTable(s.placements));
  for (const p of s.problems) console.log(p);
  return r.failures.length || s.problems.length ? 1 : 0;
}
