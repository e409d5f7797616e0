// The emulated vendor origins over HTTP: loader, first-party collector, third-party host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
});
afterAll(async () => {
  await emulator.close();
});

const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers });

describe('vendor origins', () => {
  it('serves the loader as JavaScript, naming the third-party origin as its default tp_host', async () => {
    const response = await get(emulator.loaderUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/javascript/);
    const source = await response.text();
    expect(source).toContain('"5.2.2"');
    expect(source).toContain(JSON.stringify(emulator.thirdPartyUrl));
  });

  it.each(['general5', 'early5', '5.2.2', '5.10.0'])('serves version %s at the collector root', async (version) => {
    for (const file of ['static_wdp.js', 'dyn_wdp.js']) {
      expect((await get(`${emulator.collectorUrl}/${version}/SUB/${file}?loaderVer=5.2.2`)).status).toBe(200);
    }
    expect((await get(`${emulator.thirdPartyUrl}/${version}/SUB/wdp.js`)).status).toBe(200);
  });

  it.each(['latest', 'general4', 'versionOrAliasIsRequired', '5.2'])('answers 404 for version %s', async (version) => {
    expect((await get(`${emulator.collectorUrl}/${version}/SUB/static_wdp.js`)).status).toBe(404);
  });

  it('answers 404 when the proxy prefix was not stripped', async () => {
    expect((await get(`${emulator.collectorUrl}/iojs/general5/SUB/static_wdp.js`)).status).toBe(404);
    expect((await get(`${emulator.collectorUrl}/iojs/general5/static_wdp.js`)).status).toBe(404);
  });

  it('accepts an empty subkey and the collapsed path', async () => {
    expect((await get(`${emulator.collectorUrl}/general5/static_wdp.js`)).status).toBe(200);
    expect((await get(`${emulator.thirdPartyUrl}/general5//wdp.js`)).status).toBe(200);
  });

  it('the dynamic script differs on every request, embeds the user agent and language, and is never cached', async () => {
    const headers = { 'user-agent': 'Mozilla/5.0 (Test) Chrome/156', 'accept-language': 'de-CH,de;q=0.9' };
    const first = await get(`${emulator.collectorUrl}/general5/S/dyn_wdp.js`, headers);
    const second = await get(`${emulator.collectorUrl}/general5/S/dyn_wdp.js`, headers);
    expect(first.headers.get('cache-control')).toBe('no-store');
    const [a, b] = [await first.text(), await second.text()];
    expect(a).not.toBe(b);
    expect(a).toContain('Mozilla/5.0 (Test) Chrome/156');
    expect(a).toContain('de-CH,de;q=0.9');
    const staticResponse = await get(`${emulator.collectorUrl}/general5/S/static_wdp.js`);
    expect(staticResponse.headers.get('cache-control')).toMatch(/max-age/);
  });

  it('serves only GET and HEAD', async () => {
    expect((await fetch(emulator.loaderUrl, { method: 'POST' })).status).toBe(405);
    const head = await fetch(emulator.loaderUrl, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('counts vendor requests per route and can fail them', async () => {
    emulator.inspect.reset();
    emulator.faults.fail('loader', { status: 404 });
    expect((await get(emulator.loaderUrl)).status).toBe(404);
    expect((await get(emulator.loaderUrl)).status).toBe(200);
    expect(emulator.inspect.requests('loader')).toBe(2);
  });
});
