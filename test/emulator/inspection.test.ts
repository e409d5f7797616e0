// The emulated collector's inspection path (src/emulator/inspection.ts): what a marked
// request carried, answered only to a direct request from this machine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { KEPT_MARKERS } from '../../src/emulator/inspection.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
});
afterAll(async () => emulator.close());

const inspect = (marker: string, init: RequestInit = {}) =>
  fetch(`${emulator.collectorUrl}/__bbc/last-request?marker=${marker}`, init);
const mark = (marker: string, headers: Record<string, string> = {}) =>
  fetch(`${emulator.collectorUrl}/general5/dyn_wdp.js?bbc-doctor=${marker}`, { headers });

describe('the collector keeps the headers of a marked request', () => {
  it('answers them to a direct request from this machine; the marked request is served as usual', async () => {
    const served = await mark('marker-one', { cookie: 'session=s1', authorization: 'Bearer t1' });
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toMatch(/javascript/);
    await served.body?.cancel();
    const answer = await inspect('marker-one');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const { marker, headers } = (await answer.json()) as { marker: string; headers: Record<string, string> };
    expect(marker).toBe('marker-one');
    expect(headers).toMatchObject({
      cookie: 'session=s1',
      authorization: 'Bearer t1',
      host: new URL(emulator.collectorUrl).host,
    });
  });

  it('an unmarked request is not kept, and the inspection is not counted as a collector request', async () => {
    const before = emulator.inspect.requests('collector');
    await (await fetch(`${emulator.collectorUrl}/general5/dyn_wdp.js?other=never-kept-1`)).body?.cancel();
    expect((await inspect('never-kept-1')).status).toBe(404);
    expect(await (await inspect('never-seen-1')).json()).toEqual({ error: { code: 'not_seen' } });
    expect(emulator.inspect.requests('collector')).toBe(before + 1);
  });

  it(`keeps the newest ${KEPT_MARKERS} markers`, async () => {
    for (let i = 0; i <= KEPT_MARKERS; i++) await (await mark(`bounded-${String(i).padStart(3, '0')}`)).body?.cancel();
    expect((await inspect('bounded-000')).status).toBe(404);
    expect((await inspect('bounded-001')).status).toBe(200);
    expect((await inspect(`bounded-${String(KEPT_MARKERS).padStart(3, '0')}`)).status).toBe(200);
  });

  it('a marker seen again is kept as the newest, with its latest headers', async () => {
    await (await mark('again-marker', { authorization: 'first' })).body?.cancel();
    for (let i = 1; i < KEPT_MARKERS; i++) await (await mark(`filler-${String(i).padStart(3, '0')}`)).body?.cancel();
    await (await mark('again-marker', { authorization: 'second' })).body?.cancel();
    // One more: the oldest goes, and that is no longer the marker seen again.
    await (await mark('one-more-marker')).body?.cancel();
    expect((await inspect('filler-001')).status).toBe(404);
    const { headers } = (await (await inspect('again-marker')).json()) as { headers: Record<string, string> };
    expect(headers.authorization).toBe('second');
  });
});

describe('the inspection refuses', () => {
  it.each([
    ['X-Forwarded-For', { 'x-forwarded-for': '127.0.0.1' }],
    ['X-Forwarded-Host', { 'x-forwarded-host': 'shop.example' }],
    ['Forwarded', { forwarded: 'for=127.0.0.1' }],
    ['X-Real-IP', { 'x-real-ip': '127.0.0.1' }],
    ['Via', { via: '1.1 front' }],
  ])('a request that came through a front (%s): 403', async (_, headers) => {
    await (await mark('forwarded-1')).body?.cancel();
    const answer = await inspect('forwarded-1', { headers });
    expect(answer.status).toBe(403);
    expect(await answer.json()).toEqual({ error: { code: 'inspection_local_only' } });
  });

  it('a peer that is not this machine, or no peer known: 403', async () => {
    await (await mark('remote-peer')).body?.cancel();
    const request = () => new Request(`${emulator.collectorUrl}/__bbc/last-request?marker=remote-peer`);
    expect((await emulator.handlers.collector(request(), { clientAddress: '203.0.113.9' })).status).toBe(403);
    expect((await emulator.handlers.collector(request())).status).toBe(403);
    expect((await emulator.handlers.collector(request(), { clientAddress: '::1' })).status).toBe(200);
  });

  it.each(['short', 'bad marker!', 'x'.repeat(81), ''])('a malformed marker (%j): 400', async (marker) => {
    const answer = await inspect(encodeURIComponent(marker));
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ error: { code: 'bad_marker' } });
  });

  it('a method other than GET: 405', async () => {
    expect((await inspect('marker-one', { method: 'POST', body: 'x' })).status).toBe(405);
  });
});

// The collector's handler called directly, with the peer address it is given.
describe('the inspection, against the handler', () => {
  const at = (path: string, clientAddress?: string, init: RequestInit = {}) =>
    emulator.handlers.collector(new Request(`${emulator.collectorUrl}${path}`, init), { clientAddress });

  it('only loopback peers: 127.0.0.0/8, ::1 and ::ffff:127.0.0.1; an address with 127. inside is none', async () => {
    await (await at('/general5/dyn_wdp.js?bbc-doctor=peer-marker', '127.0.0.1')).body?.cancel();
    const status = async (address: string) => (await at('/__bbc/last-request?marker=peer-marker', address)).status;
    expect(await status('127.0.0.2')).toBe(200);
    expect(await status('::ffff:127.0.0.1')).toBe(200);
    expect(await status('10.127.0.1')).toBe(403);
    expect(await status('')).toBe(403);
  });

  it('answers JSON, a refused method with its code', async () => {
    const answer = await at('/__bbc/last-request?marker=peer-marker', '127.0.0.1', { method: 'POST', body: 'x' });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(await answer.json()).toEqual({ error: { code: 'method_not_allowed' } });
  });

  it('a malformed marker is not kept: it pushes no marker out', async () => {
    await (await at('/general5/dyn_wdp.js?bbc-doctor=survivor-marker', '127.0.0.1')).body?.cancel();
    for (let i = 0; i < KEPT_MARKERS; i++)
      await (await at(`/general5/dyn_wdp.js?bbc-doctor=bad!${i}`, '127.0.0.1')).body?.cancel();
    expect((await at('/__bbc/last-request?marker=survivor-marker', '127.0.0.1')).status).toBe(200);
  });
});
