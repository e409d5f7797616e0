// Size guards of the browser bundle, measured as a user's bundler would (scripts/size.mjs).
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script without types
import { measure } from '../scripts/size.mjs';

interface Sizes {
  minimal: { gzip: number; deliveryCodeUpfront: boolean };
  full: { gzip: number; lazy: number };
  umd: { gzip: number };
}

/**
 * Regression guards at today's sizes plus a little room. The targets
 * (1,500 / 2,500 / 3,000 bytes gzip) are not met yet; README's size table shows both.
 */
const GUARDS = { minimal: 5100, full: 5700, umd: 5900 };

describe('browser bundle size', async () => {
  const sizes = (await measure()) as Sizes;

  it('importing only the minimal path leaves the POST code out (tree-shaking works)', () => {
    expect(sizes.minimal.deliveryCodeUpfront).toBe(false);
    expect(sizes.full.lazy).toBeGreaterThan(300); // the delivery chunk exists and is loaded only with `post`
  });

  it(`the minimal path stays within ${GUARDS.minimal} bytes gzip`, () => {
    expect(sizes.minimal.gzip).toBeLessThanOrEqual(GUARDS.minimal);
  });

  it(`the full path stays within ${GUARDS.full} bytes gzip`, () => {
    expect(sizes.full.gzip).toBeLessThanOrEqual(GUARDS.full);
  });

  it(`the UMD file stays within ${GUARDS.umd} bytes gzip`, () => {
    expect(sizes.umd.gzip).toBeLessThanOrEqual(GUARDS.umd);
  });
});
