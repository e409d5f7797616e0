import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Browser-side tests declare `@vitest-environment happy-dom` themselves.
    environment: 'node',
    environmentOptions: {
      happyDOM: {
        url: 'https://shop.test/checkout/step/2',
        settings: {
          // The emulated vendor scripts run in the test DOM, as the real ones run in a page.
          enableJavaScriptEvaluation: true,
          suppressInsecureJavaScriptEnvironmentWarning: true,
        },
      },
    },
    testTimeout: 10_000,
    // The tests wait on sockets and timers far more than they compute: one worker per core.
    maxWorkers: 2,
    // Tests of time limits force garbage collection: a timer must fire even when nothing else holds it.
    execArgv: ['--expose-gc'],
  },
});
