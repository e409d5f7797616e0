// @vitest-environment happy-dom
// The capture nonce from the page's side: it travels with the blackbox as `nonce`, the field
// the endpoint's replay protection reads (test/server/endpoint/nonce.test.ts), from the option or the
// script tag's data-capture-nonce.
import { beforeEach, describe, expect, it } from 'vitest';
import { failure, freshPage, LOADER_URL } from '../support/vendor-dom.js';

let api: Awaited<ReturnType<typeof freshPage>>;
beforeEach(async () => {
  api = await freshPage();
});

function endpoint() {
  const bodies: Array<Record<string, unknown>> = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    bodies.push(JSON.parse(init.body as string));
    return new Response('{}', { status: 200 });
  }) as unknown as typeof globalThis.fetch;
  return { bodies, fetch };
}

describe('captureNonce', () => {
  it('travels with the blackbox and the outcome', async () => {
    const { bodies, fetch } = endpoint();
    const bb = await api.captureBlackbox({
      loaderUrl: LOADER_URL,
      captureNonce: 'v1.abc.def.ghi',
      post: { url: '/risk', fetch },
    });
    expect(bodies).toEqual([
      {
        blackbox: bb,
        outcome: expect.objectContaining({ outcome: 'complete' }),
        nonce: 'v1.abc.def.ghi',
        capturedAt: expect.any(Number),
      },
    ]);
  });

  it('is not sent when none is given', async () => {
    const { bodies, fetch } = endpoint();
    await api.captureBlackbox({ loaderUrl: LOADER_URL, post: { url: '/risk', fetch } });
    expect(bodies[0]).not.toHaveProperty('nonce');
  });

  it('must be a string without spaces (development build)', async () => {
    expect((await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, captureNonce: 'a b' }))).code).toBe(
      'invalid_option',
    );
  });

  it('comes from data-capture-nonce on a script tag', async () => {
    const sent: Array<Record<string, unknown>> = [];
    const original = globalThis.fetch;
    globalThis.fetch = (async (_url: string, init: RequestInit) => {
      sent.push(JSON.parse(init.body as string));
      return new Response('{}');
    }) as typeof fetch;
    try {
      const tag = document.createElement('script');
      Object.assign(tag.dataset, {
        loaderUrl: LOADER_URL,
        postUrl: 'https://shop.test/risk',
        captureNonce: 'v1.tag.nonce.x',
      });
      const { startFromScriptTag } = await import('../../src/browser/declarative.js');
      await startFromScriptTag(tag);
      expect(sent).toEqual([expect.objectContaining({ nonce: 'v1.tag.nonce.x' })]);
    } finally {
      globalThis.fetch = original;
    }
  });
});
