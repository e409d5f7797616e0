// captureBlackbox outside a browser (server rendering), from either entry: not_browser, never a crash.
import { afterEach, describe, expect, it, vi } from 'vitest';

const g = globalThis as Record<string, unknown>;
afterEach(() => {
  delete g.window;
  delete g.document;
  vi.resetModules();
});

describe.each([
  ['the full entry', () => import('../../src/browser/index.js')],
  ['the lean entry', () => import('../../src/browser/lean.js')],
])('captureBlackbox of %s without a page', (_, entry) => {
  it.each([
    ['neither window nor document', {}],
    ['a window but no document', { window: {} }],
    ['a document but no window', { document: {} }],
  ])('%s: not_browser', async (_, globals) => {
    Object.assign(g, globals);
    const { captureBlackbox } = await entry();
    const error = await captureBlackbox({ loaderUrl: 'https://vendor.example/loader.js' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'BlackboxCaptureError', code: 'not_browser' });
  });
});
