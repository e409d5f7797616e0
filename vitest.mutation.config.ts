// The unit suite as the mutation run uses it: the tests of the sources only. Tests of the built
// dist/ files, of the packed tarball and of the README's snippets (which import the built
// package), the size guards and the demo command read files Stryker does not mutate.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    exclude: ['test/dist-*.test.ts', 'test/package-*.test.ts', 'test/readme.test.ts', 'test/size-budget.test.ts', 'test/demo-command.test.ts', 'node_modules/**'],
    // Stryker runs vitest in worker threads, which refuse --expose-gc (test/support/gc.ts).
    execArgv: [],
  },
});
