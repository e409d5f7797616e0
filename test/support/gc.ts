/**
 * Forces garbage collection, for tests of time limits: a timer must fire when nothing else
 * holds it. vitest.config.ts starts the workers with --expose-gc. The mutation run (Stryker
 * runs vitest in worker threads, which refuse that flag) has no gc: there the tests still run,
 * without the collections; everywhere else a missing gc fails the test instead of passing it.
 */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) return gc();
  if (!process.env.STRYKER_MUTATOR_WORKER)
    throw new Error('gc() is not exposed: vitest.config.ts must start workers with --expose-gc');
}
