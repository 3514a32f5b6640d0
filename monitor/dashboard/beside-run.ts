// `gsteer train --dashboard`: the dashboard in the training process itself, for the run
// being trained. In-process because that process mostly waits on Redis (the workers and the
// policy server are its children): serving a page costs it nothing noticeable, and the
// dashboard lives and ends with the run, with no extra process to start, supervise or orphan.
// It goes live once the run's Redis answers (launchRun may start a local one after this).
import { InputError } from '../../util/errors.ts';
import { DEFAULT_PORT, startDashboard, type Dashboard } from './start.ts';

/** Start it on `port` (default: DEFAULT_PORT, else a free one); a problem is a warning, never the end of the run. */
export async function trainDashboard(runDir: string, port?: string): Promise<Dashboard | null> {
  const log = (m: string) => console.error(`gsteer train: ${m}`);
  if (port !== undefined && !/^\d{1,5}$/.test(port)) throw new InputError(`--dashboard-port ${port}: expected a port number 0-65535 (0 picks a free one)`);
  const start = (p: number) => startDashboard({ runDirs: [runDir], port: p, log });
  try {
    let dash: Dashboard;
    try {
      dash = await start(port === undefined ? DEFAULT_PORT : Number(port));
    } catch (e) {
      if (port !== undefined || !(e instanceof InputError) || !e.message.includes('in use')) throw e;
      dash = await start(0); // the default port is taken (another dashboard?): any free one
    }
    const run = dash.runs[0]!;
    log(`dashboard on ${dash.url}runs/${encodeURIComponent(run.name)} (live while the run trains)`);
    return dash;
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    log(`warning: no dashboard: ${e.message}`);
    return null;
  }
}
