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
