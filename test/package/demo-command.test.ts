// The README's main command (snippet 'two-commands': `npm test` is what CI runs). `npm run demo` is `rollup` (as `npm test` has just run it)
// then `npm run demo:start`: this runs the latter, so that no test rebuilds dist/ while
// others read it. It serves, prints its address and stops on Ctrl-C; a port in use is a clear message.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startDemo } from '../../demo/app.js';
import { configFromEnvironment } from '../../demo/config.js';
import { snippet } from '../support/readme.js';
import { REGION_NAMES } from '../../src/server/api/regions.js';

describe('npm run demo:start', () => {
  it('prints the address, serves the pages, and stops cleanly on SIGINT', async () => {
    // The README's commands, as a check that they are still these.
    expect(snippet('two-commands').code).toMatch(/^npm install && npm run demo\s.*\nnpm test\s/);
    const child = spawn('npm', ['run', 'demo:start', '--silent'], {
      env: { ...process.env, DEMO_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    try {
      await expect
        .poll(() => /Open (http:\/\/127\.0\.0\.1:\d+)\//.test(out), { timeout: 280_000, interval: 200 })
        .toBe(true);
      const url = /Open (http:\/\/127\.0\.0\.1:\d+)\//.exec(out)![1]!;
      for (const path of [
        '/',
        '/checkout',
        '/checkout-element',
        '/checkout-adopt',
        '/spa',
        '/spa/checkout',
        '/playground',
      ]) {
        expect((await fetch(url + path)).status, path).toBe(200);
      }
      // Every page the message lists is one that serves, the README's main checkout among them.
      const listed = [...out.matchAll(/^ {2}http:\/\/127\.0\.0\.1:\d+(\/[\w-]+) /gm)].map((m) => m[1]);
      expect(listed).toEqual(['/checkout-element', '/checkout', '/spa', '/playground']);
      expect(out).toContain('built-in emulator');
      const exited = new Promise<[number | null, string | null]>((resolve) =>
        child.on('exit', (code, signal) => resolve([code, signal])),
      );
      process.kill(-child.pid!, 'SIGINT'); // Ctrl-C reaches the whole process group
      // npm itself ends by the signal, as in a terminal; the demo under it closes its servers.
      const [code, signal] = await exited;
      expect(code === 0 || code === 130 || signal === 'SIGINT', `exit ${code} ${signal}`).toBe(true);
      await expect
        .poll(
          () =>
            fetch(url + '/').then(
              () => 'up',
              () => 'down',
            ),
          { timeout: 30_000 },
        )
        .toBe('down');
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });

  it('a port already in use is a clear message', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      await expect(startDemo({ ...configFromEnvironment({}), port })).rejects.toThrow(
        new RegExp(`Port ${port} on 127\\.0\\.0\\.1 is already in use.*DEMO_PORT`),
      );
    } finally {
      blocker.close();
    }
  });

  it('refuses contradictory environment settings with a clear message', () => {
    expect(() => configFromEnvironment({ CLIENT_ID: 'x' })).toThrow(/CLIENT_SECRET/);
    expect(() => configFromEnvironment({ CLIENT_ID: 'x', CLIENT_SECRET: 'y' })).toThrow(/API_REGION/);
    expect(() => configFromEnvironment({ API_REGION: 'moon' })).toThrow(`one of ${REGION_NAMES.join(', ')}`);
    expect(() => configFromEnvironment({ DEMO_PORT: 'eighty' })).toThrow(/DEMO_PORT/);
    expect(configFromEnvironment({ CLIENT_ID: 'x', CLIENT_SECRET: 'y', API_REGION: 'eu' })).toMatchObject({
      region: 'EU',
      clientId: 'x',
    });
  });
});
