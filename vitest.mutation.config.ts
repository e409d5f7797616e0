// The unit suite as the mutation run uses it: the tests of the sources only (the built
// package's tests read files Stryker does not mutate).
import { defineConfig } from 'vitest/config';
import base, { builtPackageTests } from './vitest.config.js';

const { projects: _, ...shared } = base.test!;
export default defineConfig({
  test: {
    ...shared,
    // MUTATION_TESTS=a.test.ts,b.test.ts: only those files (with --coverageAnalysis all, for a
    // module the tests import afresh, where the per-test coverage record misses their runs).
    include: process.env.MUTATION_TESTS ? process.env.MUTATION_TESTS.split(',') : ['test/**/*.test.ts'],
    exclude: [...builtPackageTests, 'node_modules/**'],
    // Stryker runs vitest in worker threads, which refuse --expose-gc (test/support/gc.ts).
    execArgv: [],
  },
});
