// The proxy's handler with requests made in the test: what it does with a POST body that
// breaks before the limit (the client went away), which is no timeout.
import { describe, expect, it, vi } from 'vitest';
import { createFirstPartyProxy } from '../../../src/server/proxy/proxy.js';

describe('createFirstPartyProxy with a POST body that breaks', () => {
  it('throws the body’s error: no 408, nothing told to onError, the collector never called', async () => {
    const onError = vi.fn();
    const fetch = vi.fn<typeof globalThis.fetch>();
    const iojs = createFirstPartyProxy({
      collectorUrl: 'http://127.0.0.1:9/',
      methods: ['GET', 'HEAD', 'POST'],
      onError,
      fetch,
    });
    const body = new ReadableStream({ start: (controller) => controller.error(new Error('socket hang up')) });
    const request = new Request('http://shop.test/iojs/general5/x.js', {
      method: 'POST',
      body,
      duplex: 'half',
    } as RequestInit);
    await expect(iojs(request)).rejects.toThrow('socket hang up');
    expect(onError).not.toHaveBeenCalled();
    expect(fetch).not.toHaveBeenCalled();
  });
});

describe("createFirstPartyProxy and one client's requests under way", () => {
  it('holds at most maxRequestsPerClient for one client: past them 429 with Retry-After; others, and it again later, served', async () => {
    const waiting: Array<() => void> = [];
    // A collector that answers each request when the test lets it.
    const fetch = vi.fn<typeof globalThis.fetch>(
      () =>
        new Promise<Response>((resolve) =>
          waiting.push(() => resolve(new Response('ok', { headers: { 'content-type': 'application/javascript' } }))),
        ),
    );
    const iojs = createFirstPartyProxy({ collectorUrl: 'https://collector.example/', fetch, maxRequestsPerClient: 2 });
    const get = (client: string) => iojs(new Request('http://shop.test/iojs/general5/x.js'), { clientAddress: client });
    const held = [get('198.51.100.7'), get('198.51.100.7')];
    const refused = await get('198.51.100.7');
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([429, '1']);
    expect(await refused.json()).toMatchObject({ error: { code: 'too_many_requests' } });
    // Another shopper is served meanwhile.
    const other = get('203.0.113.9');
    await vi.waitFor(() => expect(waiting).toHaveLength(3));
    for (const answer of waiting.splice(0)) answer();
    expect((await other).status).toBe(200);
    // Its requests answered and read: its slots are free again.
    for (const answer of held) await (await answer).text();
    const again = get('198.51.100.7');
    await vi.waitFor(() => expect(waiting).toHaveLength(1));
    waiting[0]!();
    expect((await again).status).toBe(200);
  });

  it('counts one IPv6 /64 as one client: addresses rotated within it share its slots', async () => {
    const fetch = vi.fn<typeof globalThis.fetch>(() => new Promise<Response>(() => {}));
    const iojs = createFirstPartyProxy({ collectorUrl: 'https://collector.example/', fetch, maxRequestsPerClient: 2 });
    const get = (client: string) => iojs(new Request('http://shop.test/iojs/general5/x.js'), { clientAddress: client });
    void get('2001:db8:0:1::1');
    void get('2001:db8:0:1::2');
    expect((await get('2001:db8:0:1:ffff::3')).status).toBe(429);
    // Another /64 is another client.
    void get('2001:db8:0:2::1');
    await vi.waitFor(() => expect(fetch).toHaveBeenCalledTimes(3));
  });

  it('by default, sixty-four', async () => {
    const fetch = vi.fn<typeof globalThis.fetch>(() => new Promise<Response>(() => {}));
    const iojs = createFirstPartyProxy({ collectorUrl: 'https://collector.example/', fetch, timeoutMs: 60_000 });
    const get = () => iojs(new Request('http://shop.test/iojs/general5/x.js'), { clientAddress: '198.51.100.7' });
    for (let i = 0; i < 64; i++) void get();
    expect((await get()).status).toBe(429);
  });
});
