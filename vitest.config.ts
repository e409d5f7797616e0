import { defineConfig } from 'vitest/config';

/**
 * Tests of what `npm run build` and `npm pack` produce: the built dist/ files, the packed
 * tarball, the README's snippets (they import the built package), the size guards and the
 * demo command. `npm run test:unit` runs the tests of the sources with fakes.
 */
export const builtPackageTests = ['test/package/**/*.test.ts', 'test/docs/**/*.test.ts', 'test/deploy/**/*.test.ts'];
/**
 * Tests of the other projects that run the built dist/ files (in a child process, copied into
 * a site, or through a recipe that imports the package by its name): `npm run build` first. The mutation run leaves them out: its sandbox has no
 * dist/, and they would not see its mutants (test/house.test.ts keeps this list whole).
 */
export const builtFileTests = [
  'test/server/queue/file-queue.clock.test.ts',
  'test/server/queue/file-queue-disk.clock.test.ts',
  'test/proxy/cloudfront.front.test.ts',
  'test/proxy/netlify.front.test.ts',
  'test/proxy/nextjs.front.test.ts',
  'test/proxy/vercel.front.test.ts',
];
/**
 * Tests of the sources against real servers started for them (`.redis`: redis-server,
 * `.nginx`: nginx), whose leases and rate windows run on the servers' clocks, and on the
 * real clock (`.clock`), and Debian's promtool (`.prometheus`): `npm run test:integration`.
 */
export const integrationTests = [
  'test/**/*.redis.test.ts',
  'test/**/*.nginx.test.ts',
  'test/**/*.front.test.ts',
  'test/**/*.clock.test.ts',
  'test/**/*.prometheus.test.ts',
];

/** A test against real servers: time for them to start and answer on a busy machine. */
export const INTEGRATION_TIMEOUT_MS = 60_000;

export default defineConfig({
  test: {
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
    // A data directory of its own for each file and test: the default queue's journal never lands in the repository.
    setupFiles: ['test/support/data-dir-setup.ts'],
    // A poll waits for something that will happen; on a busy machine it takes longer than 1 s.
    expect: { poll: { timeout: 10_000 } },
    // One worker per core for the tests that build, pack and run real servers.
    maxWorkers: 2,
    // Tests of time limits force garbage collection: a timer must fire even when nothing else holds it.
    execArgv: ['--expose-gc'],
    // The server kit's default onError writes each failure to the console; the tests of that
    // default spy on console.error, and the rest would only fill the output with expected failures.
    onConsoleLog: (log, type) => !(type === 'stderr' && log.startsWith('[blackbox-capture/server] ')),
    projects: [
      // The unit tests wait on timers and loopback sockets more than they compute (about one
      // core busy with two workers): two workers a core cut the wall time from 22 s to 14 s here.
      {
        extends: true,
        test: {
          name: 'unit',
          maxWorkers: 4,
          include: ['test/**/*.test.ts'],
          exclude: [...builtPackageTests, ...integrationTests, 'node_modules/**'],
        },
      },
      { extends: true, test: { name: 'integration', include: integrationTests, testTimeout: INTEGRATION_TIMEOUT_MS } },
      // Slow tools (tsc, are-the-types-wrong, bundlers, npm pack) and whole fleets: their own time
      // limits, which fit them on a busy 2-core machine; a unit test's 10 s would not.
      {
        extends: true,
        test: { name: 'built', include: builtPackageTests, testTimeout: 300_000, hookTimeout: 300_000 },
      },
      // The server kit and the emulator in every runtime (Node 22, 24, 26, Deno 2, Bun 1), from
      // the packed tarball; the binaries come from the npm registry on first use (a few minutes).
      {
        extends: true,
        test: { name: 'runtimes', include: ['runtimes/**/*.test.ts'], testTimeout: 180_000, hookTimeout: 600_000 },
      },
      // The shopper's browser tests in every engine (Chromium, Firefox, WebKit), each with both
      // loaders: one spec, run by test/support/engines.mjs's page API. One worker: each engine
      // is a whole browser, and WebKit a display server too.
      {
        extends: true,
        test: {
          name: 'engines',
          include: ['engines/**/*.test.ts'],
          maxWorkers: 1,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
