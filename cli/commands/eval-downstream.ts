// `gsteer eval downstream RESULT...` (method §12; eval/downstream/): the original query and
// each saved eval result's refined queries go to the deep-research agent, the judge scores
// the reports in eval.downstream.judge.rounds rounds, and the score file feeds `gsteer eval
// compare` (Tables 4 and 8). `gsteer eval` dispatches its `downstream` subcommand here.
import { appendFileSync, mkdirSync } from 'node:fs';
import { writeFileAtomic } from '../../util/atomic.ts';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { loadInstances } from '../../data/load.ts';
import { evalGroups } from '../../data/splits.ts';
import { JsonlCallSink } from '../../endpoints/index.ts';
import { seededResampler } from '../../eval/bootstrap.ts';
import { table4, table8 } from '../../eval/compare-tables.ts';
import { agentFrom } from '../../eval/downstream/agent.ts';
import { searchAgentFrom } from '../../eval/downstream/agent-search.ts';
import { judgeFrom } from '../../eval/downstream/judge.ts';
import { ReportStore, slug } from '../../eval/downstream/reports.ts';
import { originalQueries, runDownstream, type MethodQueries } from '../../eval/downstream/run.ts';
import { readResultFile } from '../../eval/result-file.ts';
import { toMarkdown } from '../../eval/table.ts';
import { InputError } from '../../util/errors.ts';
import { progressBar } from '../../util/progress.ts';
import { files } from './eval-compare.ts';

export const usage = `usage: gsteer eval downstream RESULT [--label NAME] [RESULT [--label NAME] ...] --config FILE [--set key=value ...]
                              [--reports DIR] [--rounds N] [--no-original] [--out FILE]

  RESULT          a saved eval result (gsteer eval --out): its refined queries are sent, one report per episode
  --label NAME    the method name of the RESULT just before it (default: its method label)
  --config/--set  data.instances (original queries, split groups) and eval.downstream:
                  agent.kind embedded (stand-in, default) | responses (OpenAI Responses API) | chat |
                  search (the search agent: an LLM backbone that searches qref.search, filters with
                  qref.filter and reads with agent.reader, within agent.maxSearches (8) / maxReads (8)),
                  agent.baseUrl / model / apiKeyEnv / tool / maxToolCalls (15) / maxOutputTokens / timeoutMs;
                  judge.kind embedded (stand-in, default) | llm, judge.baseUrl / model / rounds (3) / temperature
  --reports DIR   score reports produced elsewhere: DIR/<method-slug>/<instanceId>.e<episode>.md
                  (slug: "Original Query" -> original-query, "G-STEER" -> g-steer); no agent is called
  --rounds N      judge rounds per report (default eval.downstream.judge.rounds, 3), averaged
  --no-original   leave out the Original Query row
  --out FILE      the score file (default runs/<runName>/eval/downstream-<agent>.json); reports go to
                  runs/<runName>/eval/downstream/<agent>/reports, request cache and call records beside`;

function methodsOf(list: ReturnType<typeof files>): MethodQueries[] {
  const out: MethodQueries[] = [];
  for (const { file, label, ablation } of list) {
    if (ablation) throw new InputError('--ablation is a gsteer eval compare flag; gsteer eval downstream sends every RESULT');
    const r = readResultFile(file);
    if (r.kind !== 'eval')
      throw new InputError(`${file} is a downstream score file; gsteer eval downstream needs eval results (gsteer eval --out) to send their refined queries`);
    const queries = new Map<string, (string | null)[]>();
    for (const e of r.result.episodes) queries.set(e.instanceId, [...(queries.get(e.instanceId) ?? []), e.refinedQuery]);
    out.push({ name: label ?? r.result.method.label, original: false, source: file, queries });
  }
  const slugs = ['original-query', ...out.map((m) => slug(m.name))];
  const dup = out.find((m, i) => slugs.indexOf(slug(m.name)) !== i + 1);
  if (dup)
    throw new InputError(
      `two methods (or a method and the Original Query row) are both named "${dup.name}" (as a folder: ${slug(dup.name)}); name them apart with --label after each file`,
    );
  return out;
}

export async function runDownstreamCommand(argv: string[]): Promise<number> {
  const { values: v, tokens } = parseArgs({
    args: argv,
    allowPositionals: true,
    tokens: true,
    options: {
      label: { type: 'string', multiple: true },
      config: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
      reports: { type: 'string' },
      rounds: { type: 'string' },
      'no-original': { type: 'boolean', default: false },
      out: { type: 'string' },
    },
  });
  const cfg = loadConfig(v.config ?? [], v.set ?? []);
  const d = cfg.eval.downstream;
  const list = files(tokens);
  if (!list.length) throw new InputError(`no eval result given\n${usage}`);
  const rounds = v.rounds === undefined ? d.judge.rounds : Number(v.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) throw new InputError(`--rounds must be a whole number >= 1 (paper: 3) but is "${v.rounds}"`);

  const all = loadInstances(cfg.data.instances);
  const instances = new Map(all.map((i) => [i.id, i]));
  const methods = methodsOf(list);
  for (const m of methods)
    for (const id of m.queries.keys())
      if (!instances.has(id))
        throw new InputError(
          `${m.source}: instance "${id}" is not in data.instances (${cfg.data.instances.join(', ')}); pass the config the result was evaluated with`,
        );
  const rows = d.original && !v['no-original'] ? [originalQueries(methods, instances), ...methods] : methods;

  const base = join(cfg.runDir, cfg.runName, 'eval', 'downstream');
  const agentSlug = slug(d.agent.name);
  const sink = new JsonlCallSink(join(base, 'llm_calls.jsonl'));
  const cacheDir = join(base, 'cache');
  const external = v.reports !== undefined;
  const store = new ReportStore(v.reports ?? join(base, agentSlug, 'reports'), external);
  // the search agent's runs (every step: thought, action, queries, kept results, reads) beside the call records
  const runs = join(base, 'agent_runs.jsonl');
  const agent = external
    ? null
    : d.agent.kind === 'search'
      ? await searchAgentFrom(cfg, sink, (run) => appendFileSync(runs, `${JSON.stringify(run)}\n`))
      : agentFrom(d.agent, { sink, cacheDir });
  const judge = judgeFrom({ ...d.judge, rounds }, { sink, cacheDir });
  const agentInfo = external
    ? { name: d.agent.name, model: null, standIn: false }
    : { name: d.agent.name, model: agent?.model ?? null, standIn: agent?.standIn ?? false };

  const standIns = [
    agentInfo.standIn && 'the deep-research agent is the embedded stand-in (eval/downstream/agent.ts: it lays the query out as a report, no research)',
    judge.standIn && 'the judge is the embedded stand-in (eval/downstream/judge.ts: target-word rubric, no model)',
  ].filter(Boolean);
  for (const s of standIns) console.error(`gsteer eval downstream: NOTE ${s}; these are not paper numbers.`);
  console.error(
    `gsteer eval downstream: agent ${external ? `external reports in ${v.reports}` : `${d.agent.kind} ${agentInfo.model ?? '(stand-in)'}`}, judge ${d.judge.kind} ${judge.model ?? '(stand-in)'}, ${rounds} round(s) per report`,
  );

  const r = await runDownstream({
    instances,
    groups: evalGroups(all),
    methods: rows,
    agent,
    agentInfo,
    store,
    judge,
    rounds,
    concurrency: Math.max(d.agent.concurrency, d.judge.concurrency), // each endpoint caps its own requests
    progress: (n) => progressBar('downstream', n),
  });
  const out = v.out ?? join(cfg.runDir, cfg.runName, 'eval', `downstream-${agentSlug}.json`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileAtomic(out, `${JSON.stringify(r.scores, null, 2)}\n`);
  const spread = {
    resample: seededResampler(cfg.seed, cfg.eval.bootstrap.samples),
    samples: cfg.eval.bootstrap.samples,
    level: cfg.eval.bootstrap.level,
    seed: cfg.seed,
  };
  console.log(toMarkdown(table4([r.scores], spread)));
  console.log(`\n${toMarkdown(table8([r.scores], spread))}`);
  console.log(
    `\nreports: ${r.researched} written by the agent, ${r.reused} read from ${store.dir}${r.fellBack ? `; ${r.fellBack} episode(s) without a refined query scored on the original query's report` : ''}`,
  );
  console.log(`scores: ${out} (gsteer eval compare ${out} ... for Tables 4 and 8)`);
  return 0;
}
