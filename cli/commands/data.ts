// `gsteer data validate|stats FILE...`: check instance and user-state JSONL files
// (every problem, located) and summarize a dataset (splits, IEGs, eval groups).
import { parseArgs } from 'node:util';
import { validateAll, formatProblem } from '../../data/validate.ts';
import { datasetStats, formatStats } from '../../data/stats.ts';
import { build, buildUsage, split } from './data-build.ts';

export const summary = 'build instances from raw benchmark files, split, validate, print stats';
export const usage = `usage: gsteer data validate FILE...
       gsteer data stats [--json] FILE...

validate  checks every record against data/schema.ts and the cross-record rules
          (duplicate ids across files, IEG edges and cycles, weights, empty seed
          answers, late-activatable targets without a parent, splits, user states)
          and prints each problem as  file:line: [id] field: message.
          Exit 0 when clean, 1 when there are problems.
stats     counts per split, users, tasks, targets per instance, essential share,
          IEG edges, late-activatable targets and the test eval groups (seen,
          unseen_user, unseen_task, both_unseen). Invalid records are left out
          and make the exit code 1.

          validate also runs the leak check: no test instance's seed answer in a
          user-state memory or profile or a train instance's offlineProfile, no
          memory sourced from a test instance (data/leaks.ts).
User-state files are recognized by name (user_states*.jsonl) or by content
(records with userId and no taskId); every other file holds instances.

${buildUsage}`;

export async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'build') return build(argv.slice(1));
  if (argv[0] === 'split') return split(argv.slice(1));
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
  const [sub, ...files] = positionals;
  if ((sub !== 'validate' && sub !== 'stats') || files.length === 0) {
    console.error(usage);
    return 2;
  }
  const v = validateAll(files);
  if (sub === 'validate') {
    for (const p of v.problems) console.log(formatProblem(p));
    const kinds = v.kinds.map((k) => `${k.file} (${k.records} ${k.kind === 'user_states' ? 'user states' : 'instances'})`).join(', ');
    console.log(v.problems.length ? `${v.problems.length} problem(s) in ${kinds}` : `ok: ${kinds}`);
    return v.problems.length ? 1 : 0;
  }
  const stats = datasetStats(v.instances, v.userStates);
  console.log(values.json ? JSON.stringify(stats, null, 2) : formatStats(stats));
  if (v.problems.length) console.error(`${v.problems.length} problem(s) left invalid records out; run gsteer data validate ${files.join(' ')}`);
  return v.problems.length ? 1 : 0;
}
