// toNodeHandler's onError and onForwardIgnored when they fail themselves (src/server/errors.ts,
// safeOnError): the answer stays the one the kit gives, and nothing is left unhandled.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BodyTimeoutError, toNodeHandler, type FetchHandler } from '../../../../src/server/index.js';
import { closeServers, serve } from '../../../support/http.js';

afterEach(closeServers);
afterEach(() => vi.restoreAllMocks());
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const timingOut: FetchHandler = async () => {
  throw new BodyTimeoutError(10_000);
};

describe('toNodeHandler with an onError that fails', () => {
  it.each([
    [
      'throws',
      () => {
        throw new Error('logger broke');
      },
    ],
    ['rejects', () => Promise.reject(new Error('sink down'))],
  ] as const)('a body cut for time, onError %s: still 408, nothing unhandled', async (_, onError) => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const unhandled: unknown[] = [];
    const onU = (r: unknown) => void unhandled.push(r);
    process.on('unhandledRejection', onU);
    try {
      const origin = await serve(toNodeHandler(timingOut, { onError: onError as never }));
      const response = await fetch(`${origin}/`, { method: 'POST', body: 'x' });
      await response.text();
      await pause(50);
      expect(response.status).toBe(408);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onU);
    }
  });

  it('an onForwardIgnored that throws: the request is still answered by the handler (not 500), the throw logged', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const origin = await serve(
      toNodeHandler(async () => new Response('ok'), {
        onForwardIgnored: () => {
          throw new Error('hook broke');
        },
      }),
    );
    const response = await fetch(`${origin}/`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(response.status).toBe(200);
    expect(logged.mock.calls.map(([line]) => String(line)).join('\n')).toContain('hook broke');
  });
});
