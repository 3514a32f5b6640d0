// E2E: a run whose disk fills up (issue 32 item 6) stops with a message saying so, leaves no
// temp file, and `gsteer resume` after space is freed ends exactly where an uninterrupted run
// ends. The run directory is on a small tmpfs filled by the test mid-run: this needs the
// right to mount (root / CAP_SYS_ADMIN); without it the test is skipped and says why (the
// writes themselves are covered anywhere by tests/util/atomic-enospc.test.ts).
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adapterBytes, cli, e2eConfig, removeRuns, reproducibleMetrics, tempRun, waitFor, writeConfig } from './helpers.ts';

const ref = tempRun('full-ref');
const t = tempRun('full');
t.instances = ref.instances;
const mnt = join(t.dir, 'tmpfs');
mkdirSync(mnt, { recursive: true });
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', mnt], { stdio: 'ignore' }).status === 0;
if (!mounted) console.warn('tests/e2e/disk-full: skipped: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)');
afterAll(async () => {
  if (mounted) spawnSync('umount', ['-l', mnt], { stdio: 'ignore' });
  await removeRuns(ref, t);
});

const over = { grpo: { maxUpdates: 6, learningRate: 0.1, groupsPerUpdate: 2, maxPolicyLag: 0 }, checkpoint: { every: 2, keep: 3 } };
const env = { GSTEER_SYNTHETIC_TRAIN_MS: '400' };

/** Tmp files a writer left: `<name>.tmp-<pid>-<hex>` (util/atomic.ts). */
const temps = (d: string): string[] =>
  readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    /\.tmp-\d+-[0-9a-f]{8}$/.test(e.name) ? [join(d, e.name)] : e.isDirectory() ? temps(join(d, e.name)) : [],
  );

describe('e2e: disk full', () => {
  it.skipIf(!mounted)(
    'stops with a disk-full message, then resumes once space is freed, ending as an uninterrupted run',
    async () => {
      const runRef = join(ref.dir, 'runs', 'full');
      const r = await cli(['train', '--config', writeConfig(ref.dir, e2eConfig(ref, 'full', over))], env).done;
      expect(r.code, r.stderr).toBe(0);

      const runDir = join(mnt, 'full');
      const run = cli(['train', '--config', writeConfig(t.dir, e2eConfig(t, 'full', { ...over, runDir: mnt }))], env);
      await waitFor(() => existsSync(join(runDir, 'checkpoints', 'step-000002', 'manifest.json')), 90_000, 'checkpoint 2');
      const filler = join(mnt, 'filler');
      const chunk = Buffer.alloc(256 * 1024, 1);
      for (;;) {
        try {
          appendFileSync(filler, chunk);
        } catch (e) {
          expect((e as NodeJS.ErrnoException).code).toBe('ENOSPC');
          break;
        }
      }
      const x = await run.done;
      expect(x.code).toBe(1);
      expect(x.stderr).toMatch(/the disk is full \(.*ENOSPC.*\); free space on the filesystem of .* and continue with gsteer resume/);
      expect(x.stderr).not.toMatch(/\n\s+at .*\.ts:\d+/); // no stack trace
      rmSync(filler);
      const resumed = await cli(['resume', runDir], env).done;
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(temps(runDir)).toEqual([]);
      expect(reproducibleMetrics(runDir)).toEqual(reproducibleMetrics(runRef));
      expect(adapterBytes(runDir, 6).equals(adapterBytes(runRef, 6))).toBe(true);
    },
    240_000,
  );
});
