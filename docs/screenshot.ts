// Remakes docs/dashboard.png: the dashboard on a run directory (default runs/demo, after
// `npm run demo`), in Debian's chromium driven by playwright-core, as the browser test does.
//
//   node --import tsx docs/screenshot.ts [RUN_DIR] [--out docs/dashboard.png] [--height 1400]
import { chromium } from 'playwright-core';
import { parseArgs } from 'node:util';
import { basename } from 'node:path';
import { startDashboard } from '../monitor/dashboard/start.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { out: { type: 'string', default: 'docs/dashboard.png' }, height: { type: 'string', default: '1400' } },
});
const runDir = positionals[0] ?? 'runs/demo';
const dash = await startDashboard({ runDirs: [runDir], port: 0, log: () => undefined });
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1500, height: Number(values.height) } });
  await page.goto(`${dash.url}runs/${basename(runDir)}`);
  await page.waitForFunction(() => ((globalThis as any).gsteerDashboard?.charts.reward?.data[0]?.length ?? 0) > 0, undefined, { timeout: 15_000 });
  await page.screenshot({ path: values.out as string });
  console.log(`wrote ${values.out}`);
} finally {
  await browser.close();
  await dash.close();
}
