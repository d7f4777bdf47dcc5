import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    globalSetup: ['./test/support/build.ts'],
    exclude: ['node_modules/**', 'dist/**'],
    // Two cores: a few forks keep the suite quick without starving real servers in tests.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 20_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
