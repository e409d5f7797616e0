// The doctor's leak check (src/doctor/leaks.ts) on the shipped nginx configuration in front
// of the emulator's collector: nothing of the shop's reaches the collector. (The leaky front
// and the kit's proxy: test/doctor/leaks.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/doctor/doctor.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
// @ts-expect-error: a plain ES module script without types
import { nginxAvailable, startNginx } from '../support/nginx.mjs';

describe.skipIf(!(nginxAvailable as () => boolean)())('the doctor on the shipped nginx configuration', () => {
  let emulator: Emulator;
  let nginx: { origin: string; stop(): void };
  beforeAll(async () => {
    emulator = await startEmulator();
    nginx = await (startNginx as (url: string, o: object) => Promise<typeof nginx>)(emulator.collectorUrl, {
      page: `<!doctype html><script src="${emulator.loaderUrl}"></script>`,
    });
  });
  afterAll(async () => {
    nginx?.stop();
    await emulator?.close();
  });

  it('passes every leak check; the cookies nginx drops on purpose are the one warning', async () => {
    const report = await runDoctor(`${nginx.origin}/checkout`, {
      collectorUrl: emulator.collectorUrl,
      thirdPartyHost: emulator.thirdPartyUrl,
    });
    const leaks = report.findings.filter((f) => f.id.startsWith('leak_'));
    expect(leaks.map((f) => [f.id, f.status])).toEqual([
      ['leak_cookies', 'pass'],
      ['leak_auth', 'pass'],
      ['leak_address', 'pass'],
      ['leak_host', 'pass'],
    ]);
    expect(report.findings.filter((f) => f.status !== 'pass').map((f) => [f.id, f.status])).toEqual([
      ['set_cookie', 'warn'],
    ]);
    expect(report.ok).toBe(true);
  });
});
