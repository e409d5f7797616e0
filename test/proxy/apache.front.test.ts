// The shipped apache recipe, run by a real apache2 in front of the emulator's collector.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { frontConformance } from '../support/front-conformance.js';
import { APACHE, available, recipe, startApache, type RunningFront } from '../support/fronts.js';

if (available(APACHE, 'apache2')) {
  frontConformance('Apache httpd with proxy/apache/iojs.conf', startApache, {
    vendorCookies: 'namespaced',
    hostilePaths: 'refused',
  });

  // CI clones into a folder only its owner can read; Apache's workers (User nobody) read
  // iojs.lua at each request, so the recipe must be installed where they can read it.
  describe('Apache httpd with the recipe taken from a folder only its owner can read', () => {
    let emulator: Emulator;
    let front: RunningFront;
    let ownerOnly: string;
    beforeAll(async () => {
      ownerOnly = mkdtempSync(join(tmpdir(), 'bbc-owner-only-'));
      cpSync(recipe('apache'), join(ownerOnly, 'apache'), { recursive: true });
      emulator = await startEmulator();
      front = await startApache(emulator.collectorUrl, ownerOnly);
    });
    afterAll(async () => {
      await front?.stop();
      await emulator?.close();
      rmSync(ownerOnly, { recursive: true, force: true });
    });

    it('serves the static script through the Lua allow-lists (not 500)', async () => {
      const answer = await fetch(`${front.origin}/iojs/general5/static_wdp.js`);
      expect(answer.status).toBe(200);
      expect(await answer.text()).toContain('bb_callback');
    });
  });
} else describe.skip(`apache2 not found at ${APACHE}`, () => {});
