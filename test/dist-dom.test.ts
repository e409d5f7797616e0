// @vitest-environment happy-dom
// The built ESM file in a DOM, against the emulated loader: the same flow as the sources.
import { describe, expect, it } from 'vitest';
import { decodeBlackbox } from '../src/emulator/scripts/routes.js';
import { freshPage, LOADER_URL } from './support/vendor-dom.js';

describe('dist/index.js in a DOM', () => {
  it('captures the final blackbox', async () => {
    await freshPage();
    const dist = await import('../dist/index.js' as string);
    const bb: string = await dist.captureBlackbox({ loaderUrl: LOADER_URL });
    expect(decodeBlackbox(bb)?.sources).toHaveLength(3);
  });

  it('writes error messages from its messages chunk', async () => {
    await freshPage();
    const dist = await import('../dist/index.js' as string);
    const error = await dist.captureBlackbox({ loaderUrl: LOADER_URL, timeoutMs: -5 }).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'invalid_option' });
    expect(error.message).toBe('[blackbox-capture] Invalid option "timeoutMs": expected a number of milliseconds from 1 to 600000, received -5.');
  });
});
