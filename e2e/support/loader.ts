/**
 * Which loader a browser test runs: every Playwright test that uses a loader runs twice,
 * in the project `emulated-loader` and in `real-loader` (the vendor's loader 5.2.2,
 * extracted at run time from the pinned devDependency). A behaviour that passes with one
 * and fails with the other is a bug in the package or in the emulator.
 */
import { test } from '@playwright/test';
import { realLoaderSource } from '../../test/support/real-loader.mjs';

export type LoaderKind = 'emulated' | 'real';

export function loaderKind(): LoaderKind {
  return test.info().project.metadata?.loader === 'real' ? 'real' : 'emulated';
}

/** Emulator options that serve the loader of this project. */
export function loaderOptions(): { loaderSource?: string } {
  return loaderKind() === 'real' ? { loaderSource: realLoaderSource() } : {};
}
