// The unit and integration suites as the mutation run uses them: the tests of the sources only
// (the tests of dist/ and of the packed package read files Stryker does not mutate, and its
// sandbox has no dist/ on a clean clone).
import { defineConfig } from 'vitest/config';
import base, { builtFileTests, builtPackageTests, INTEGRATION_TIMEOUT_MS } from './vitest.config.js';

const { projects: _, ...shared } = base.test!;
export default defineConfig({
  test: {
    ...shared,
    // MUTATION_TESTS=a.test.ts,b.test.ts: only those files (with --coverageAnalysis all, for a
    // module the tests import afresh, where the per-test coverage record misses their runs).
    include: process.env.MUTATION_TESTS ? process.env.MUTATION_TESTS.split(',') : ['test/**/*.test.ts'],
    exclude: [...builtPackageTests, ...builtFileTests, 'node_modules/**'],
    // One project here: the integration tests' limit for all (vitest.config.ts), since they
    // run real servers on a machine that Stryker's two runners keep busy.
    testTimeout: INTEGRATION_TIMEOUT_MS,
    // Stryker runs vitest in worker threads, which refuse --expose-gc (test/support/gc.ts).
    execArgv: [],
  },
});
