/**
 * The loader conformance table's own checks in Chromium: that it can tell two loaders apart,
 * that its failure cases fail what they name, and the conformance command. The table itself
 * (the emulator's loader against the vendor's real loader 5.2.2, case by case) runs in every
 * engine: engines/conformance.test.ts. This spec runs both loaders itself, so it runs in one
 * project only (playwright.config.ts).
 */
import { expect, test } from './support/test.js';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFORMANCE_CASES, startConformanceSite, type ConformanceSite } from '../src/emulator/conformance.js';
import { realLoaderSource } from '../test/support/real-loader.mjs';
import { snippet } from '../test/support/readme.js';

let emulated: ConformanceSite;
let real: ConformanceSite;
test.beforeAll(async () => {
  emulated = await startConformanceSite();
  real = await startConformanceSite(realLoaderSource());
});
test.afterAll(async () => {
  await emulated?.close();
  await real?.close();
});

test('the table has at least 20 cases', () => {
  expect(CONFORMANCE_CASES.length).toBeGreaterThanOrEqual(20);
});

test('a case where the loaders differ is told apart (the check can fail)', async ({ page }) => {
  // The emulator before this table: both first-party scripts at once. A loader that does so differs.
  const unchained = realLoaderSource().replace('n && (c.onload = n);', 'n && n();');
  const site = await startConformanceSite(unchained);
  try {
    const testCase = CONFORMANCE_CASES.find((c) => c.name === 'first-party static_wdp.js 404')!;
    const reference = await real.record(page, testCase);
    const candidate = await site.record(page, testCase);
    expect(candidate.scripts).not.toEqual(reference.scripts);
  } finally {
    await site.close();
  }
});

test('every failure case fails what it names: each 404 reaches the page, none is served from the cache', async ({
  page,
}) => {
  // A case run after a successful one loads the same URLs; a cached 200 would hide its 404.
  const ok = await real.record(page, CONFORMANCE_CASES[1]!);
  expect(ok.flags).toEqual({});
  for (const testCase of CONFORMANCE_CASES.filter((c) => c.fail)) {
    const record = await real.record(page, testCase);
    expect(Object.keys(record.flags).length, testCase.name).toBeGreaterThan(0);
  }
});

test("the conformance command of the README ('conformance-command'): the real loader 5.2.2 passes every case, a broken loader does not", async () => {
  test.setTimeout(240_000);
  // An integrator's project with the package installed: its bin on the path of npx.
  const dir = mkdtempSync(join(tmpdir(), 'bbc-conformance-'));
  const root = fileURLToPath(new URL('..', import.meta.url));
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(root, join(dir, 'node_modules', 'blackbox-capture'));
  symlinkSync(join(root, 'dist', 'emulator-cli.js'), join(dir, 'node_modules', '.bin', 'blackbox-capture-emulator'));
  const command = snippet('conformance-command').code.trim();
  expect(command).toBe('npx blackbox-capture-emulator conformance ./loader.js');
  const run = () =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn('sh', ['-c', command], {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, npm_config_yes: 'false' },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      child.stderr.on('data', (chunk) => (err += chunk));
      child.on('exit', (code) => resolve({ code, out, err }));
    });
  writeFileSync(join(dir, 'loader.js'), realLoaderSource());
  const passing = await run();
  expect(passing.out).toMatch(new RegExp(`^${CONFORMANCE_CASES.length} passed, 0 failed$`, 'm'));
  expect(passing.code).toBe(0);
  writeFileSync(join(dir, 'loader.js'), realLoaderSource().replace('n && (c.onload = n);', 'n && n();'));
  const failing = await run();
  expect(failing.code).toBe(1);
  expect(failing.out).toMatch(/^DIFFERS first-party static_wdp\.js 404$/m);
});
