// The dashboard serves a run's comparison (gsteer eval compare's output in RUN/eval/compare):
// the listing, each file with its type, nothing outside the folder's plain table/figure files.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLayout } from '../../checkpoints/layout.ts';
import { seededResampler } from '../../eval/bootstrap.ts';
import { compare } from '../../eval/compare.ts';
import { startDashboard, type Dashboard } from '../../monitor/dashboard/start.ts';
import { writeFixture } from '../eval/compare-fixture.ts';
import { fixtureRun, tempRoot, testPrefix } from './dashboard-fixture.ts';

/** A GET with the path exactly as given (no URL normalization), the body as bytes. */
function get(base: string, path: string): Promise<{ status: number; type: string; body: Buffer; csp: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type']),
          body: Buffer.concat(chunks),
          csp: String(res.headers['content-security-policy']),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const root = tempRoot('compare');
// Finished runs (no Redis answers at their URL): the dashboard follows their files.
const withCompare = fixtureRun(root, 'run-c', { steps: 2, prefix: testPrefix('compare'), redisUrl: 'redis://127.0.0.1:1' });
const without = fixtureRun(root, 'run-d', { steps: 2, prefix: testPrefix('compare-d'), redisUrl: 'redis://127.0.0.1:1' });
let dash: Dashboard;

beforeAll(async () => {
  const evalDir = join(withCompare.dir, 'eval');
  mkdirSync(evalDir, { recursive: true });
  const f = writeFixture(evalDir);
  await compare({
    files: [
      { file: f.direct, ablation: false },
      { file: f.gsteer, ablation: false },
    ],
    sweep: [],
    spread: { resample: seededResampler(1, 50), samples: 50, level: 0.95, seed: 1 },
    out: runLayout(withCompare.dir).compare,
  });
  writeFileSync(join(runLayout(withCompare.dir).compare, 'notes.txt'), 'not a table');
  dash = await startDashboard({ runDirs: [withCompare.dir, without.dir], port: 0, log: () => undefined });
});
afterAll(async () => {
  await dash?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("dashboard: a run's comparison", () => {
  it('lists the tables and figure, and serves each with its type under the page CSP', async () => {
    const list = JSON.parse((await get(dash.url, '/api/runs/run-c/compare')).body.toString('utf8'));
    expect(list).toEqual({
      run: 'run-c',
      files: ['figure3.csv', 'figure3.md', 'figure3.png', 'figure3.svg', 'figure3.vl.json', 'table2-groups.csv', 'table2-groups.md', 'table2.csv', 'table2.md'],
    });
    const svg = await get(dash.url, '/api/runs/run-c/compare/figure3.svg');
    expect([svg.status, svg.type]).toEqual([200, 'image/svg+xml']);
    expect(svg.body.toString('utf8')).toMatch(/^<svg [^>]*class="marks"/);
    expect(svg.csp).toContain("default-src 'none'");
    const png = await get(dash.url, '/api/runs/run-c/compare/figure3.png');
    expect([png.status, png.type, png.body.subarray(1, 4).toString('latin1')]).toEqual([200, 'image/png', 'PNG']);
    const md = await get(dash.url, '/api/runs/run-c/compare/table2.md');
    expect([md.status, md.type]).toEqual([200, 'text/plain; charset=utf-8']);
    expect(md.body.toString('utf8')).toContain('| G-STEER | 0.8235 ± ');
    expect((await get(dash.url, '/api/runs/run-c/compare/table2.csv')).type).toBe('text/csv; charset=utf-8');
  });

  it('a run without one lists nothing; other names, traversal and unknown runs are refused', async () => {
    expect(JSON.parse((await get(dash.url, '/api/runs/run-d/compare')).body.toString('utf8')).files).toEqual([]);
    expect((await get(dash.url, '/api/runs/run-d/compare/figure3.svg')).status).toBe(404);
    for (const p of [
      '/api/runs/run-c/compare/notes.txt',
      '/api/runs/run-c/compare/..%2F..%2Fconfig.yaml',
      '/api/runs/run-c/compare/%2e%2e',
      '/api/runs/run-c/compare/table9.md',
    ]) {
      const r = await get(dash.url, p);
      expect(r.status, p).toBe(404);
      expect(r.body.toString('utf8'), p).not.toContain('runName');
    }
    expect((await get(dash.url, '/api/runs/nope/compare')).status).toBe(404);
    expect((await get(dash.url, '/api/runs/..%2Frun-c/compare/table2.md')).status).toBe(400);
  });
});
