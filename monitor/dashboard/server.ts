// The dashboard's HTTP layer (Express 5). URLs:
//   /                         the runs it serves (index.html)
//   /runs/<run>               one run's page (run.html; ?overlay=a,b draws other runs over it)
//   /api/runs                 the runs, one summary each
//   /api/runs/<run>/metrics   the run's records (JSON, one per update)
//   /api/runs/<run>/config.yaml, /run.json    the resolved config, run.json
// Every answer (JSON, text, events) passes the one masking rule (util/secrets.ts) on its way
// out: a key that reached a run file, a record or an error is never served.
//   /api/runs/<run>/trajectories?step=N       update N's groups and trajectories (default: latest)
//   /api/runs/<run>/compare[/<file>]          gsteer eval compare's tables and Figure 3 (compare.ts)
//   /api/charts?run=a&run=b   the chart plan for those runs' keys
//   /api/events?run=a&run=b   server-sent events: plan, reset, update, live
//   /metrics                  Prometheus text
//   /queues                   bull-board
//   /static/<file>            the page's scripts and styles, uPlot from node_modules
// Run names are looked up among the served runs, never joined into a path; names with
// `/`, `\`, NUL or `..` are refused with 400, unknown ones are 404.
import { readFileSync } from 'node:fs';
import { parse as parseYaml, stringify } from 'yaml';
import { maskConfig, maskValues } from '../../util/secrets.ts';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { MetricsRecord } from '../sink.ts';
import { authMiddleware } from './auth.ts';
import { chartPlan } from './charts.ts';
import { mountCompare } from './compare.ts';
import type { PrometheusMetrics } from './prometheus.ts';
import type { RunQueues } from './queues.ts';
import { numericKeys } from './records.ts';
import { readRunInfo } from '../../checkpoints/run-info.ts';
import { RUN_NAME, type ServedRun } from './served-run.ts';
import { stepsWithGroups, updateTrajectories } from './trajectories.ts';

export interface AppDeps {
  runs: readonly ServedRun[];
  queues: RunQueues;
  prometheus: PrometheusMetrics;
  token: string | null;
  allowRetries: boolean;
  log: (msg: string) => void;
}

const here = (f: string) => fileURLToPath(new URL(`./public/${f}`, import.meta.url));
const require = createRequire(import.meta.url);
/** Every file /static serves: a fixed list, so no request names a path. */
const STATIC = new Map<string, string>([
  ['uPlot.esm.js', require.resolve('uplot/dist/uPlot.esm.js')],
  ['uPlot.min.css', require.resolve('uplot/dist/uPlot.min.css')],
  ...['dashboard.css', 'index.js', 'run.js', 'charts.js', 'smooth.js', 'trajectories.js', 'api.js', 'compare.js'].map((f): [string, string] => [f, here(f)]),
]);
const PAGES = { index: here('index.html'), run: here('run.html') };

/** Strict for our pages; bull-board's UI needs inline styles. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const CSP_BOARD = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; base-uri 'self'; frame-ancestors 'none'"; // also keeps its web fonts (a CDN) out

/** RUN/config.yaml fit for serving: the masking rule over the parsed config (references kept). */
export function maskedConfigText(text: string): string {
  try {
    return stringify(maskConfig(parseYaml(text)));
  } catch {
    return maskValues(text);
  }
}

export function createApp(d: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  const byName = new Map(d.runs.map((r) => [r.name, r]));
  app.use((req, res, next) => {
    res.setHeader('Content-Security-Policy', req.path.startsWith('/queues') ? CSP_BOARD : CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    next();
  });
  app.use(authMiddleware(d.token));
  // every text or JSON answer through the masking rule (res.json sends through res.send)
  app.use((_req, res, next) => {
    const send = res.send.bind(res);
    res.send = ((body: unknown) => send(typeof body === 'string' ? maskValues(body) : body)) as typeof res.send;
    next();
  });

  /** The served run a URL names; answers 400/404 itself and returns null otherwise. */
  const runOf = (name: string, res: Response): ServedRun | null => {
    if (!RUN_NAME.test(name) || name === '.' || name === '..') {
      res.status(400).type('text/plain').send('400: a run name is letters, digits, . _ - (no /, \\, NUL or ..)\n');
      return null;
    }
    const run = byName.get(name);
    if (!run)
      res
        .status(404)
        .type('text/plain')
        .send(`404: no run named ${name} is served here (served: ${[...byName.keys()].join(', ')})\n`);
    return run ?? null;
  };
  const runsOf = (req: Request, res: Response): ServedRun[] | null => {
    const names = new URL(req.originalUrl, 'http://dashboard').searchParams.getAll('run');
    const runs: ServedRun[] = [];
    for (const n of names.length ? names : [...byName.keys()]) {
      const r = runOf(n, res);
      if (!r) return null;
      runs.push(r);
    }
    return runs;
  };
  const summary = (r: ServedRun) => ({
    name: r.name,
    runId: r.info.runId,
    epoch: r.info.epoch,
    createdAt: r.info.createdAt,
    live: r.live,
    updates: r.records.length,
    lastStep: r.records.at(-1)?.step ?? null,
    reward: r.records.at(-1)?.reward ?? null,
  });

  app.get('/', (_req, res) => res.sendFile(PAGES.index));
  app.get('/favicon.ico', (_req, res) => void res.status(204).end());
  app.get('/runs/:run', (req, res) => {
    if (runOf(req.params.run, res)) res.sendFile(PAGES.run);
  });
  app.get('/static/:file', (req, res) => {
    const file = STATIC.get(req.params.file);
    if (!file) return void res.status(404).type('text/plain').send('404: no such file\n');
    res.sendFile(file);
  });
  app.get('/api/runs', (_req, res) => void res.json({ runs: d.runs.map(summary), redis: d.queues.redisStatus() }));
  app.get('/api/runs/:run/metrics', (req, res) => {
    const r = runOf(req.params.run, res);
    if (r) res.json({ run: r.name, live: r.live, records: r.records });
  });
  app.get('/api/runs/:run/config.yaml', (req, res) => {
    const r = runOf(req.params.run, res);
    if (r) res.type('text/plain').send(maskedConfigText(readFileSync(r.layout.config, 'utf8')));
  });
  app.get('/api/runs/:run/run.json', (req, res) => {
    const r = runOf(req.params.run, res);
    if (r) res.json(readRunInfo(r.layout)); // read again: the run writes its policy URL after the dashboard starts
  });
  app.get('/api/runs/:run/trajectories', (req, res) => {
    const r = runOf(req.params.run, res);
    if (!r) return;
    const steps = stepsWithGroups(r.layout);
    const q = typeof req.query.step === 'string' ? req.query.step : '';
    if (q && !/^\d{1,9}$/.test(q)) return void res.status(400).type('text/plain').send('400: step is an update number (a whole number)\n');
    const step = q ? Number(q) : (steps.at(-1) ?? 0);
    res.json({ run: r.name, step, steps, groups: updateTrajectories(r.layout, step) });
  });
  mountCompare(app, runOf);
  app.get('/api/charts', (req, res) => {
    const runs = runsOf(req, res);
    if (runs) res.json(chartPlan(numericKeys(runs.flatMap((r) => r.records))));
  });
  app.get('/api/events', (req, res) => {
    const runs = runsOf(req, res);
    if (runs) streamEvents(runs, req, res);
  });
  app.get('/metrics', async (_req, res) => {
    const text = await d.prometheus.render();
    res.type(d.prometheus.contentType).send(text);
  });
  app.use('/queues', d.queues.board('/queues', d.allowRetries));
  app.use((_req, res) => void res.status(404).type('text/plain').send('404: not found\n'));
  // Our own handler: express's default one would print stacks into responses.
  app.use((err: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
    const status = err.status && err.status >= 400 && err.status < 500 ? err.status : 500;
    if (status === 500) d.log(`dashboard: ${err.stack ?? err.message}`);
    res
      .status(status)
      .type('text/plain')
      .send(status === 500 ? '500: internal error (see the dashboard output)\n' : `${status}: ${err.message}\n`);
  });
  return app;
}

/** Server-sent events for some runs: the chart plan, each run's records, then every change. */
function streamEvents(runs: ServedRun[], req: Request, res: Response): void {
  res.status(200).set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  res.flushHeaders();
  const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${maskValues(JSON.stringify(data))}\n\n`);
  let plan = '';
  const replan = () => {
    const next = JSON.stringify(chartPlan(numericKeys(runs.flatMap((r) => r.records))));
    if (next !== plan) res.write(`event: plan\ndata: ${(plan = next)}\n\n`);
  };
  res.write('retry: 2000\n\n');
  replan();
  const off: (() => void)[] = [];
  for (const r of runs) {
    send('reset', { run: r.name, records: r.records, live: r.live });
    // A record with a key not seen before (new metrics) gets its chart before its points.
    const onUpdate = (record: MetricsRecord) => {
      replan();
      send('update', { run: r.name, record });
    };
    const onReset = (records: MetricsRecord[]) => {
      replan();
      send('reset', { run: r.name, records, live: r.live });
    };
    const onLive = (live: string) => send('live', { run: r.name, live });
    r.on('update', onUpdate).on('reset', onReset).on('live', onLive);
    off.push(() => r.off('update', onUpdate).off('reset', onReset).off('live', onLive));
  }
  const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
  req.on('close', () => {
    clearInterval(ping);
    for (const f of off) f();
  });
}
