// `gsteer monitor RUN_DIR... --serve`: parse the options, start the dashboard, print its
// URL (never the token), serve until SIGINT/SIGTERM.
import { parseArgs } from 'node:util';
import { InputError } from '../../util/errors.ts';
import { TOKEN_ENV } from './auth.ts';
import { DEFAULT_PORT, startDashboard } from './start.ts';

export const SERVE_USAGE = `--serve serves the web dashboard of the RUN_DIRs (several: runs overlaid) until Ctrl-C:
reward and component curves with ±std bands, trainer, episode and throughput charts (any
numeric metric gets one), EMA smoothing, x by update or wall time, config.yaml and run.json,
the trajectories of an update; live from the run's Redis stream, else from metrics.jsonl.
  --port P          port (default ${DEFAULT_PORT}; 0 picks a free one)
  --host H          address to bind (default 127.0.0.1); any other host needs a token
  --token T         require T on every request (or set ${TOKEN_ENV}, which ps cannot see):
                    Authorization: Bearer T, or open the URL once with ?token=T (a cookie then)
  --allow-retries   make the queue board writable (retry, promote, clean); read-only otherwise
URLs: / (runs), /runs/<run>, /api/runs/<run>/metrics (JSON), /metrics (Prometheus), /queues.`;

export async function serveCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      serve: { type: 'boolean' },
      port: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      token: { type: 'string' },
      'allow-retries': { type: 'boolean', default: false },
    },
  });
  const port = Number(values.port ?? DEFAULT_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InputError(`--port ${values.port}: expected a port number 0-65535 (0 picks a free one)`);
  const token = values.token ?? process.env[TOKEN_ENV] ?? null;
  const dash = await startDashboard({
    runDirs: positionals,
    host: values.host,
    port,
    token: token === '' ? null : token,
    allowRetries: values['allow-retries'],
  });
  console.log(
    `gsteer monitor: dashboard on ${dash.url} (listening on ${values.host}; runs: ${dash.runs.map((r) => r.name).join(', ')})${token ? '; token required' : ''}`,
  );
  console.log('Ctrl-C to stop');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await dash.close();
  return 0;
}
