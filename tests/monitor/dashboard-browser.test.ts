// The dashboard in a real browser: Debian's chromium driven by playwright-core. It opens a
// recorded run, finds the reward chart with one point per update (uPlot's data read from the
// page, not pixels), then appends updates to live runs and sees the charts grow without a
// reload: one XADDed to the run's Redis stream, one written to metrics.jsonl of a run whose
// Redis does not answer (the file-watching fallback). Also: EMA smoothing, x by wall time
// across a resume, overlaid runs, the trajectories table, no CSP violation. The screenshot
// it keeps is printed (runs/test-artifacts/dashboard.png).
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../../monitor/dashboard/start.ts';
import { connect, deletePrefixedKeys } from '../../util/redis.ts';
import { metricsStreamKey } from '../../checkpoints/run-keys.ts';
import { REPO } from '../e2e/helpers.ts';
import { fixtureRecord, fixtureRun, tempRoot, testPrefix } from './dashboard-fixture.ts';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];
const present = existsSync(CHROMIUM);
const SHOT = join(REPO, 'runs/test-artifacts/dashboard.png');

const root = tempRoot('browser');
const prefix = testPrefix('browser');
// Run A was resumed once after update 3: wall_time counts again from that start.
const aRecords = [1, 2, 3].map((s) => fixtureRecord(s, 0)).concat([4, 5].map((s) => fixtureRecord(s, 1, -35)));
const a = fixtureRun(root, 'run-a', { steps: 5, prefix, records: aRecords });
const b = fixtureRun(root, 'run-b', { steps: 3, prefix: `${prefix}-b`, redisUrl: 'redis://127.0.0.1:1' });
let dash: Dashboard | null = null;
let ctx: BrowserContext | null = null;
const profile = mkdtempSync(join(root, 'chromium-profile-'));

afterAll(async () => {
  await ctx?.close();
  await dash?.close();
  await deletePrefixedKeys(prefix);
  rmSync(root, { recursive: true, force: true });
});

/** TensorBoard's debiased EMA, written apart from the page's: s_n = w s_{n-1} + (1 - w) y_n, shown as s_n / (1 - w^n). */
function referenceEma(ys: number[], w: number): number[] {
  const out: number[] = [];
  let s = 0;
  ys.forEach((y, i) => {
    s = w * s + (1 - w) * y;
    out.push(s / (1 - w ** (i + 1)));
  });
  return out;
}

const chartData = (page: Page, id: string) => page.evaluate((i) => (globalThis as any).gsteerDashboard.charts[i].data as (number | null)[][], id);
/** Wait until the reward chart's cell [series][point] is (or with `not`, is no longer) `value`; series 0 is x, point -1 the number of points. */
const waitReward = (page: Page, at: [number, number], value: number | null, not = false) =>
  page.waitForFunction(
    ({ at: [series, point], value: v, not: n }) => {
      const u = (globalThis as any).gsteerDashboard?.charts.reward;
      const got = !u ? undefined : point < 0 ? u.data[series]?.length : u.data[series]?.[point];
      return got !== undefined && (n ? got !== v : got === v); // undefined: no such cell (or a gap) yet
    },
    { at, value, not },
    { timeout: 15_000 },
  );

describe('dashboard in chromium', () => {
  it(`draws one point per update and grows live without a reload${present ? '' : ` [skipped: ${CHROMIUM} is absent; apt-get install -y chromium]`}`, async (t) => {
    if (!present) return t.skip();
    dash = await startDashboard({ runDirs: [a.dir, b.dir], port: 0, log: () => undefined });
    ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1400, height: 1000 } });
    const page = await ctx.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    await page.addInitScript(() =>
      (globalThis as any).document.addEventListener('securitypolicyviolation', (e: any) => console.error(`CSP: ${e.violatedDirective} ${e.blockedURI}`)),
    );

    // The recorded run: one point per update, the values of metrics.jsonl.
    await page.goto(`${dash.url}runs/run-a`);
    await waitReward(page, [0, -1], 5);
    expect(await chartData(page, 'reward')).toEqual([[1, 2, 3, 4, 5], aRecords.map((r) => r.reward)]);
    const band = await chartData(page, 'rewards/r_align'); // [x, mean, mean + std, mean - std]
    expect(band[2]).toEqual(aRecords.map((r) => Number(r['rewards/r_align/mean']) + Number(r['rewards/r_align/std'])));
    await page.evaluate(() => ((globalThis as any).notReloaded = true));

    // Live: an update XADDed to the run's stream (not to the file) appears without a reload.
    const redis = connect('redis://127.0.0.1:6379');
    const six = fixtureRecord(6, 1, -35);
    await redis.xadd(metricsStreamKey(prefix, 'run-a'), '*', 'json', JSON.stringify(six));
    redis.disconnect();
    await waitReward(page, [0, -1], 6);
    expect((await chartData(page, 'reward'))[1]?.[5]).toBe(six.reward);
    expect(await page.evaluate(() => (globalThis as any).notReloaded)).toBe(true);
    const rewards = [...aRecords, six].map((r) => Number(r.reward));

    // Smoothing: w = 0.6 gives the reference EMA (first point unchanged: s_1 / (1 - 0.6) = y_1).
    await page.$eval('#smoothing', (el: any) => {
      el.value = '0.6';
      el.dispatchEvent(new Event('input'));
    });
    await waitReward(page, [1, 1], rewards[1]!, true);
    const smoothed = (await chartData(page, 'reward'))[1] as number[];
    referenceEma(rewards, 0.6).forEach((v, i) => expect(smoothed[i]).toBeCloseTo(v, 12));
    await page.$eval('#smoothing', (el: any) => {
      el.value = '0';
      el.dispatchEvent(new Event('input'));
    });

    // x by wall time: after the resume the clock continues from update 3's 30 s.
    await page.selectOption('#xaxis', 'wall_time');
    await waitReward(page, [0, 0], 10);
    expect((await chartData(page, 'reward'))[0]).toEqual([10, 20, 30, 35, 45, 55]);
    await page.selectOption('#xaxis', 'step');
    await waitReward(page, [0, 0], 1);

    // The trajectories of the latest update on disk (5): one row each, a click shows the turns.
    await page.waitForSelector('#traj-table tr.traj');
    expect(await page.locator('#traj-table tr.traj').count()).toBe(4);
    await page.locator('#traj-table tr.traj').nth(3).click();
    expect(await page.locator('#traj-table tr.detail').innerText()).toContain('What is your budget? (trajectory 3)');

    mkdirSync(join(REPO, 'runs/test-artifacts'), { recursive: true });
    await page.screenshot({ path: SHOT, fullPage: true });
    console.log(`dashboard screenshot: ${SHOT}`);

    // Two runs overlaid; run-b's Redis does not answer, so its new update comes from metrics.jsonl.
    await page.goto(`${dash.url}runs/run-a?overlay=run-b`);
    await waitReward(page, [2, -1], 6); // a second run's column, over the union of steps
    expect(await page.evaluate(() => (globalThis as any).gsteerDashboard.charts.reward.series.map((s: { label: string }) => s.label).slice(1))).toEqual([
      'run-a reward',
      'run-b reward',
    ]);
    expect((await chartData(page, 'reward'))[2]?.map((v) => v ?? null)).toEqual([...b.records.map((r) => r.reward), null, null, null]); // no point: a gap
    expect(await page.locator('#runinfo').innerText()).toMatch(/run-b 3 update\(s\).*watching metrics\.jsonl/);
    const bFour = fixtureRecord(4, 0);
    appendFileSync(join(b.dir, 'metrics.jsonl'), `${JSON.stringify(bFour)}\n`);
    await waitReward(page, [2, 3], null, true);
    expect((await chartData(page, 'reward'))[2]?.[3]).toBe(bFour.reward);

    expect(problems).toEqual([]);
  }, 90_000);
});
