// One `gsteer data build` run: read and check the raw folder, fix the split, run the steps
// (rules, or an LLM behind the request cache in OUT/cache), write OUT/instances.jsonl,
// OUT/user_states.jsonl and OUT/build_report.json as one set with OUT/manifest.json last
// (output-set.ts), and check the result with the same rules as `gsteer data validate`
// (leaks included).
import { join } from 'node:path';
import { createEndpoint, JsonlCallSink, teeSinks, withRequestCache, type CallRecord, type EndpointOptions } from '../../endpoints/index.ts';
import { InputError } from '../../util/errors.ts';
import { progressBar, type Progress } from '../../util/progress.ts';
import { formatProblem } from '../problem.ts';
import { readRawDir } from '../raw/read.ts';
import type { RawDataset } from '../raw/schema.ts';
import { validateAll } from '../validate.ts';
import { buildDataset, plannedCalls, type BuildResult } from './pipeline.ts';
import { PAPER_SPLIT, splitPairs, type Placement, type SplitOptions } from './split.ts';
import { llmSteps, ruleSteps } from './steps.ts';
import { writeBuildSet } from './output-set.ts';

export interface RunOptions {
  raw: string;
  out: string;
  split?: Partial<SplitOptions> & { seed: number };
  /** An LLM endpoint for every step; absent = the embedded rules. */
  llm?: Omit<EndpointOptions, 'role'> & { temperature?: number; maxTokens?: number };
  dryRun?: boolean;
  /** Progress output (stderr by default); tests pass a sink. */
  progress?: (label: string, total: number) => Progress;
  log?: (line: string) => void;
}

export interface RunSummary {
  result?: BuildResult;
  planned: ReturnType<typeof plannedCalls>;
  placements: Placement[];
  calls: { sent: number; cached: number; failed: number; promptTokens: number; completionTokens: number };
  problems: string[];
}

export function readRaw(dir: string): RawDataset {
  const { dataset, problems } = readRawDir(dir);
  if (!dataset) throw new InputError(`${problems.length} problem(s) in ${dir}:\n${problems.map(formatProblem).join('\n')}`, problems.map(formatProblem));
  return dataset;
}

/** The split; one with no training or no test pair is refused, with the counts that made it so. */
export function placementsFor(ds: RawDataset, o: Partial<SplitOptions> & { seed: number }): Placement[] {
  const opts = { ...PAPER_SPLIT, ...o };
  const p = splitPairs(
    ds.pairs.map((x) => ({ id: x.id, userId: x.user.id, taskId: x.task.id, split: x.split })),
    opts,
  );
  const train = p.filter((x) => x.split === 'train').length;
  const users = new Set(p.map((x) => x.userId)).size;
  const tasks = new Set(p.map((x) => x.taskId)).size;
  if (train === 0 || train === p.length)
    throw new InputError(
      `the split of ${p.length} pairs (${users} users, ${tasks} tasks) has ${train === 0 ? 'no training pairs' : 'no test pairs'}: ` +
        `--test-fraction ${opts.testFraction}, --held-out-users ${opts.heldOutUsers}, --held-out-tasks ${opts.heldOutTasks} (held-out shares round up to one user or task, whose every pair is test, and a user's or task's last training pair is never taken), seed ${opts.seed}; ` +
        (train === 0
          ? 'lower --test-fraction / --held-out-users / --held-out-tasks'
          : 'raise --test-fraction or --held-out-*, or add pairs: small data leaves few pairs to move') +
        ', then check it with gsteer data split',
    );
  return p;
}

const line = (v: unknown) => `${JSON.stringify(v)}\n`;

export async function runBuild(o: RunOptions): Promise<RunSummary> {
  const log = o.log ?? ((l: string) => console.log(l));
  const ds = readRaw(o.raw);
  const placements = placementsFor(ds, o.split ?? { seed: 42 });
  const planned = plannedCalls(ds, placements);
  const calls = { sent: 0, cached: 0, failed: 0, promptTokens: 0, completionTokens: 0 };
  if (o.dryRun) return { planned, placements, calls, problems: [] };
  const counter = {
    record(r: CallRecord) {
      if (r.status === 'cached') calls.cached++;
      else if (r.status === 'ok') calls.sent++;
      else calls.failed++;
      calls.promptTokens += r.promptTokens ?? 0;
      calls.completionTokens += r.completionTokens ?? 0;
    },
  };
  const steps = o.llm
    ? llmSteps(
        withRequestCache(
          createEndpoint({ ...o.llm, role: 'builder' }, { sink: teeSinks(counter, new JsonlCallSink(join(o.out, 'llm_calls.jsonl'))) }),
          join(o.out, 'cache'),
        ),
        { temperature: o.llm.temperature, maxTokens: o.llm.maxTokens },
      )
    : ruleSteps;
  // One tick per step per pair (5) and per training pair's profile.
  const bar = (o.progress ?? progressBar)(`data build (${steps.kind})`, 5 * ds.pairs.length + placements.filter((p) => p.split === 'train').length);
  const info = () => (steps.kind === 'llm' ? `calls ${calls.sent} cached ${calls.cached} tokens ${calls.promptTokens + calls.completionTokens}` : '');
  const result = await buildDataset(ds, placements, steps, { tick: () => bar.tick(1, info()) });
  bar.done(info());
  const report = {
    steps: steps.kind,
    raw: o.raw,
    split: placements,
    candidates: result.candidates,
    failures: result.failures,
  };
  const stray = writeBuildSet(
    o.out,
    {
      'instances.jsonl': result.instances.map(line).join(''),
      'user_states.jsonl': result.userStates.map(line).join(''),
      'build_report.json': `${JSON.stringify(report, null, 2)}\n`,
    },
    { raw: o.raw, seed: o.split?.seed ?? 42, steps: steps.kind === 'llm' ? 'llm' : 'rules' },
  );
  for (const f of stray) log(`removed ${f}, a temp file an earlier build left (it was stopped)`);
  for (const f of result.failures)
    log(`not built: ${f.instanceId} at step ${f.step}: ${f.error}${f.reply !== null ? `\n  last reply: ${f.reply.slice(0, 300)}` : ''}`);
  const v = validateAll([join(o.out, 'instances.jsonl'), join(o.out, 'user_states.jsonl')]);
  return { result, planned, placements, calls, problems: v.problems.map(formatProblem) };
}
