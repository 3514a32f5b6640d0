// Figure 3 in a real browser (Debian's chromium through playwright-core, the launch flags of
// tests/monitor/dashboard-browser.test.ts): the SVG gsteer eval compare wrote has one point
// per method and one bar per method that asks, the axis titles the figure promises, and text
// with a size; the run page of the dashboard links it and shows it; the PNG carries the text
// (it differs from the same SVG rendered with its text removed).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { runLayout } from '../../checkpoints/layout.ts';
import { seededResampler } from '../../eval/bootstrap.ts';
import { compare } from '../../eval/compare.ts';
import { AXIS } from '../../eval/figure3.ts';
import { svgToPng } from '../../eval/render-figure.ts';
import { startDashboard, type Dashboard } from '../../monitor/dashboard/start.ts';
import { fixtureRun, testPrefix } from '../monitor/dashboard-fixture.ts';
import { DIRECT, writeFixture } from './compare-fixture.ts';
import { resultOf } from './scored-fixture.ts';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];
const present = existsSync(CHROMIUM);
const skipNote = present ? '' : ` [skipped: ${CHROMIUM} is absent; apt-get install -y chromium]`;

const root = mkdtempSync(join(tmpdir(), 'gsteer-figure3-'));
let ctx: BrowserContext | null = null;
let dash: Dashboard | null = null;
afterAll(async () => {
  await ctx?.close();
  await dash?.close();
  rmSync(root, { recursive: true, force: true });
});

/** Three methods into a run's eval/ and its comparison: Direct Rewrite, G-STEER, and a Clarification Agent that asks 3 per episode. */
async function figureRun(): Promise<{ run: string; out: string }> {
  const run = fixtureRun(root, 'run-fig', { steps: 1, prefix: testPrefix('figure3'), redisUrl: 'redis://127.0.0.1:1' });
  const evalDir = join(run.dir, 'eval');
  mkdirSync(evalDir, { recursive: true });
  const f = writeFixture(evalDir);
  const clarify = join(evalDir, 'clarify.json');
  writeFileSync(
    clarify,
    JSON.stringify(
      resultOf(
        DIRECT.map((e) => ({ ...e, askCount: 3 })),
        'clarify',
        'Clarification Agent',
      ),
    ),
  );
  const out = runLayout(run.dir).compare;
  await compare({
    files: [f.direct, f.gsteer, clarify].map((file) => ({ file, ablation: false })),
    sweep: [],
    spread: { resample: seededResampler(3, 100), samples: 100, level: 0.95, seed: 3 },
    out,
  });
  return { run: run.dir, out };
}

const figureFacts = (page: Page) =>
  page.evaluate(() => {
    const d = (globalThis as any).document;
    const texts = [...d.querySelectorAll('g.role-axis-title text')] as any[];
    return {
      points: d.querySelectorAll('g.methods_marks > path').length,
      bars: d.querySelectorAll('g.gains_marks > path').length,
      titles: texts.map((t) => t.textContent),
      widths: texts.map((t) => t.getBBox().width),
      labels: [...d.querySelectorAll('g.methods_marks > path')].map((p: any) => p.getAttribute('aria-label')),
    };
  });

describe('Figure 3 in chromium', () => {
  it(`has one point per method, a bar per asking method, the axis titles, and shows on the run page${skipNote}`, async (t) => {
    if (!present) return t.skip();
    const { run, out } = await figureRun();
    ctx = await chromium.launchPersistentContext(mkdtempSync(join(root, 'profile-')), {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 1400, height: 1000 },
    });
    const page = await ctx.newPage();
    await page.goto(pathToFileURL(join(out, 'figure3.svg')).href);
    const facts = await figureFacts(page);
    expect(facts.points).toBe(3); // Direct Rewrite, G-STEER, Clarification Agent
    expect(facts.bars).toBe(2); // the two that ask (Direct Rewrite is the reference)
    expect(facts.titles).toEqual([AXIS.questions, AXIS.ewcov, AXIS.method, AXIS.gain]);
    expect(facts.titles).toEqual(['Avg. questions per episode', 'E-WCov', 'Method', 'E-WCov gain per question']);
    for (const w of facts.widths) expect(w).toBeGreaterThan(20);
    // the points carry the pooled numbers (tests/eval/compare.test.ts works them by hand)
    expect(facts.labels.join('\n')).toContain('Method: G-STEER; method: G-STEER; ask: 2.33; ewcov: 0.9091');

    // the dashboard's run page links the comparison and shows the figure it serves
    dash = await startDashboard({ runDirs: [run], port: 0, log: () => undefined });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    await page.goto(`${dash.url}runs/run-fig`);
    await page.locator('#compare-link').waitFor({ state: 'visible', timeout: 15_000 });
    await page.waitForFunction(() => ((globalThis as any).document.getElementById('compare-figure')?.naturalWidth ?? 0) > 0, undefined, { timeout: 15_000 });
    expect(await page.locator('#compare-files a').allTextContents()).toContain('table2.md');
    await page.locator('#compare a:has(#compare-figure)').click();
    await page.waitForURL(/\/api\/runs\/run-fig\/compare\/figure3\.svg$/);
    expect((await figureFacts(page)).points).toBe(3);
    expect(problems).toEqual([]);

    // PNG: drawn in the page, it differs from the same SVG with no <text>, where text is
    const svg = readFileSync(join(out, 'figure3.svg'), 'utf8');
    const bare = svgToPng(svg.replace(/<text[^>]*>[^<]*<\/text>/g, ''));
    const png = readFileSync(join(out, 'figure3.png'));
    await page.goto('about:blank');
    const diff = await page.evaluate(
      async ([a, b]) => {
        const g = globalThis as any;
        const pixels = async (b64: string) => {
          const img = new g.Image();
          img.src = `data:image/png;base64,${b64}`;
          await img.decode();
          const c = g.document.createElement('canvas');
          [c.width, c.height] = [img.width, img.height];
          const x = c.getContext('2d');
          x.drawImage(img, 0, 0);
          return { w: img.width, h: img.height, d: x.getImageData(0, 0, img.width, img.height).data as Uint8ClampedArray };
        };
        const [p, q] = [await pixels(a as string), await pixels(b as string)];
        let n = 0;
        for (let i = 0; i < p.d.length; i += 4) if (Math.abs(p.d[i]! - q.d[i]!) > 64) n++;
        return { n, w: p.w, h: p.h };
      },
      [png.toString('base64'), bare.toString('base64')],
    );
    const [w, h] = [Number(/width="(\d+)"/.exec(svg)![1]), Number(/height="(\d+)"/.exec(svg)![1])];
    expect([diff.w, diff.h]).toEqual([2 * w, 2 * h]); // rendered at 2x
    expect(diff.n).toBeGreaterThan(2000); // titles, labels and tick numbers: thousands of pixels
  });
});
