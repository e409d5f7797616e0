// Mutation testing of the core files on the unit suite: `npm run mutation` (tens of minutes),
// or one file: `npm run mutation -- --mutate src/server/proxy.ts`. Not part of `npm test`.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner', './scripts/stryker-ignorers.mjs'],
  // Message texts and log lines: changing their words changes no behaviour a test should pin.
  ignorers: ['message-texts'],
  coverageAnalysis: 'perTest',
  mutate: [
    'src/browser/capture.ts',
    'src/browser/options.ts',
    'src/browser/deliver.ts',
    'src/server/endpoint.ts',
    'src/server/token-source.ts',
    'src/server/proxy.ts',
    'src/server/device-risk-client.ts',
    'src/server/deadline.ts',
    'src/emulator/scripts/loader.ts',
    'src/emulator/scripts/routes.ts',
    'src/emulator/service/service.ts',
  ],
  ignorePatterns: ['dist', 'test-results', 'playwright-report', 'bench-results', '.demo', 'reports', 'demo/screenshots'],
  concurrency: 2,
  timeoutMS: 20_000,
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  thresholds: { high: 85, low: 70, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
