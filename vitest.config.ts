import { existsSync } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';

// Two lanes, one suite: `npm test` (vitest run) runs every file once. `npm run test:fast`
// runs the fast lane only (~3.5 min on 2 idle cores), `npm run test:slow` the rest.
// A file is slow when it runs whole trainings, builds or servers (tests/e2e/, the SDK
// conformance peer, a browser), has a budget of 120 s or more, or was among the fast lane's
// heaviest; SLOW lists them, every other file is fast. A new test that takes more than ~5 s
// alone belongs here.
const SLOW = [
  'tests/e2e/**/*.test.ts', // whole runs: train, resume, faults, demos
  'tests/conformance/**/*.test.ts', // the official Python SDK against gsteer's trainer service
  'tests/cli/gsteer.test.ts', // npm pack + install
  'tests/cli/qref-base.test.ts',
  'tests/structured/turn/cursor.test.ts',
  'tests/data/build-e2e.test.ts',
  'tests/data/build-llm.test.ts',
  'tests/data/build-serve.test.ts',
  'tests/model/masked-head.test.ts',
  'tests/model/token-masks.test.ts',
  'tests/monitor/dashboard-browser.test.ts', // chromium
  'tests/rollout/agent/qref-episode-http.test.ts',
  'tests/structured/turn/menu-grammar.test.ts',
  'tests/structured/qref/turn.test.ts',
  'tests/serve/structured-outputs.test.ts',
  'tests/structured/compile.test.ts',
  'tests/structured/policy-filter.test.ts',
  'tests/structured/refiner-filter.test.ts',
  'tests/sft/demo-base.test.ts',
  'tests/trainer/constrained-ratio.test.ts',
  'tests/trainer/learning.test.ts',
  'tests/trainer/update/contract-masks.test.ts',
  'tests/trainer/update/contract-part.test.ts',
  // the fast lane's heaviest files when it was measured (each ~3-10 s on a 2-core machine)
  'tests/data/persona.test.ts',
  'tests/layers/dependency-rules.test.ts',
  'tests/model/batch-invariance.test.ts',
  'tests/model/batch-step.test.ts',
  'tests/serve/batching.test.ts',
  'tests/trainer/prefix-grouping.test.ts',
  'tests/trainer/tinker/codec.test.ts',
];

// A SLOW path that names no file would quietly move its file to the fast lane: refuse it.
const stale = SLOW.filter((p) => !p.includes('*') && !existsSync(new URL(p, import.meta.url)));
if (stale.length) throw new Error(`vitest.config.ts SLOW names files that do not exist: ${stale.join(', ')}; fix the path or remove the entry`);

// The lane: GSTEER_TEST_LANE=fast or slow (npm run test:fast / test:slow); unset, every file.
// One pool either way: vitest projects would give each lane its own two forks, and the two lanes
// running side by side put four forks on two cores (the whole suite took 2.3x as long).
const lane = process.env.GSTEER_TEST_LANE || undefined;
if (lane !== undefined && lane !== 'fast' && lane !== 'slow') throw new Error(`GSTEER_TEST_LANE="${lane}": use fast, slow, or leave it unset for every file`);
const include = lane === 'slow' ? SLOW : ['tests/**/*.test.ts'];
const exclude = lane === 'fast' ? [...configDefaults.exclude, ...SLOW] : configDefaults.exclude;

// Two cores on CI: run files in two forks; slow end-to-end files set their own timeouts.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    include,
    exclude,
  },
});
