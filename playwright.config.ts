import { defineConfig } from '@playwright/test';

// Debian's Chromium: Playwright cannot download browsers here. Override with CHROMIUM_PATH.
const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: './e2e',
  testMatch: '**/*.spec.ts',
  outputDir: './test-results',
  // Baselines of the README's screenshots (e2e/demo.spec.ts): compared on every run, written
  // with --update-snapshots, which also writes the README's own images in demo/screenshots/.
  snapshotPathTemplate: 'e2e/screenshots/{arg}{ext}',
  fullyParallel: true,
  workers: 2,
  retries: 0,
  // Generous limits: a busy machine slows every page, and how fast a capture ends is asserted
  // against its own configured time limit, never against these.
  timeout: 90_000,
  expect: { timeout: 20_000 },
  reporter: process.env.CI ? [['list'], ['html', { open: 'never', outputFolder: 'playwright-report' }]] : 'list',
  // Every test runs with the emulator's loader and with the vendor's real loader 5.2.2.
  projects: [
    { name: 'emulated-loader', metadata: { loader: 'emulated' } },
    // The conformance spec compares both loaders itself: it runs once.
    { name: 'real-loader', metadata: { loader: 'real' }, testIgnore: '**/conformance.spec.ts' },
  ],
  use: {
    browserName: 'chromium',
    launchOptions: {
      executablePath,
      args: [
        '--no-sandbox',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-gpu',
        '--no-first-run',
      ],
    },
  },
});
