// The README's "Local development with the emulator", as written, on the packed tarball: the
// emulator command writes .env, the server file reads it, a page opened in Chromium captures
// through the proxy and posts, and the emulator's callback prints the decision on the server.
// The section's first line (`npm install blackbox-capture express`) is the one stand-in: the
// package is installed from its tarball, and express from this repository's node_modules.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/processes.mjs';
import { fileOf, snippet } from '../support/readme.js';
import { installPackedTarball, ROOT } from '../support/tarball.js';

const commands = snippet('local-dev-commands').code.trim().split('\n');
const server = snippet('local-dev-server');

let dir = '';
let browser: Browser | undefined;
const children: ChildProcess[] = [];

/** A terminal's environment: none of the variables the section sets (vitest sets BASE_URL to '/'). */
function shellEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of [
    'LOADER_URL',
    'COLLECTOR_URL',
    'TOKEN_URL',
    'BASE_URL',
    'ACCOUNT_URL',
    'API_URL',
    'RETRIEVAL_URL',
    'CLIENT_ID',
    'CLIENT_SECRET',
    'PORT',
  ])
    delete env[name];
  return env;
}

/** Runs one line of the section with sh in the app's folder, as a terminal would; collects its output. */
function run(line: string, env: NodeJS.ProcessEnv = {}): { child: ChildProcess; output: () => string } {
  const child = spawn('sh', ['-c', line], {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...shellEnv(), ...env },
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  return { child, output: () => output };
}

beforeAll(() => {
  ({ dir } = installPackedTarball('bbc-local-dev-'));
  symlinkSync(join(ROOT, 'node_modules', 'express'), join(dir, 'node_modules', 'express'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'shop', private: true, type: 'module' }));
  writeFileSync(join(dir, fileOf(server)), server.code);
});

afterAll(async () => {
  await browser?.close();
  const running = children.filter((child) => child.exitCode === null && child.pid);
  const exited = running.map((child) => new Promise((resolve) => child.once('exit', resolve)));
  for (const child of running) process.kill(-child.pid!, 'SIGTERM');
  await Promise.all(exited);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the README: local development with the emulator', () => {
  it('has three commands: install, the emulator, the server', () => {
    expect(commands).toHaveLength(3);
    expect(commands[0]).toMatch(/^npm install blackbox-capture express\b/);
    expect(commands[1]).toMatch(/^npx blackbox-capture-emulator --env > \.env\b/);
    expect(commands[2]).toMatch(/^node --env-file=\.env server\.mjs\b/);
  });

  it('takes a page from nothing to a decision printed on the server', async () => {
    const emulator = run(commands[1]!);
    // The emulator writes .env once it listens; the second terminal starts after that.
    await expect
      .poll(() => readFileSync(join(dir, '.env'), { encoding: 'utf8', flag: 'a+' }), { timeout: 30_000 })
      .toMatch(/^CLIENT_SECRET=.+$/m);
    expect(emulator.child.exitCode).toBeNull();

    const port = await freePort();
    const shop = run(commands[2]!, { PORT: String(port) });
    const site = `http://127.0.0.1:${port}`;
    await expect
      .poll(
        () =>
          fetch(site).then(
            (r) => `${r.status}`,
            () => `not listening: ${shop.output()}`,
          ),
        { timeout: 30_000 },
      )
      .toBe('200');

    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
    const page = await browser.newPage();
    const through = { proxy: 0, post: 0 };
    page.on('response', (response) => {
      const { pathname } = new URL(response.url());
      if (pathname.startsWith('/iojs/') && response.status() === 200) through.proxy++;
      // Accepted at once (the endpoint's default answer), checked in the background.
      if (pathname === '/device-risk' && response.status() === 202) through.post++;
    });
    await page.goto(site);
    const blackbox = await page.evaluate(
      () => (window as unknown as { BlackboxCapture: { ready: Promise<string> } }).BlackboxCapture.ready,
    );
    expect(blackbox).toMatch(/^0400/);
    await expect.poll(() => shop.output(), { timeout: 30_000 }).toMatch(/^decision: PROCESSED [A-Z]+$/m);
    expect(through.proxy).toBeGreaterThan(0);
    expect(through.post).toBe(1);
    // The decision stays on the server: the page never saw it.
    expect(await page.content()).not.toMatch(/PROCESSED|PASSED/);
  });
});
