import { defineConfig } from 'vitest/config';

// Two cores on CI: run files in two forks; slow end-to-end files set their own timeouts.
export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
