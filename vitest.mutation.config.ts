// The unit suite as the mutation run uses it: the tests of the sources only. Tests of the built
// dist/ files, the size guards and the demo command read files Stryker does not mutate.
import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

export default mergeConfig(
  base,
  defineConfig({
    test: {
      exclude: ['test/dist-*.test.ts', 'test/size-budget.test.ts', 'test/demo-command.test.ts', 'node_modules/**'],
    },
  }),
);
