// `gsteer serve` as a child process for the serve benchmarks: started through the one CLI
// entry, resolved once it prints its URL; its counters read back from /metrics.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../cli/gsteer.mjs', import.meta.url));

/** `gsteer serve ARGS...`; its stderr goes through, less the one line per request. */
export function startServe(args: readonly string[]): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, [CLI, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve({ url: m[1] as string, proc });
    });
    proc.stderr?.on('data', (d: Buffer) => {
      if (!/ (GET|POST) \//.test(d.toString())) process.stderr.write(d);
    });
    proc.on('exit', (code) => reject(new Error(`gsteer serve exited ${code} before listening`)));
  });
}

/** The value of counter/gauge `gsteer_serve:<name>` (0 when absent). */
export async function serveMetric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(
    text
      .split('\n')
      .find((l) => l.startsWith(`gsteer_serve:${name} `))
      ?.split(' ')[1] ?? 0,
  );
}
