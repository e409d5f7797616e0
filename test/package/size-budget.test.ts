// Size guards of the browser bundle, measured as a user's bundler would (scripts/size.mjs).
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script without types
import { GUARDS, measure } from '../../scripts/size.mjs';

interface Sizes {
  minimal: { gzip: number; deliveryCodeUpfront: boolean; messagesUpfront: boolean; entriesUpfront: string[] };
  full: { gzip: number; lazy: number };
  messages: { gzip: number };
  umd: { gzip: number; messagesInside: boolean };
}

// The guards live in scripts/size.mjs, which prints them after every build.
describe('browser bundle size', async () => {
  const sizes = (await measure()) as Sizes;

  it('importing only the minimal path leaves the POST code out (tree-shaking works)', () => {
    expect(sizes.minimal.deliveryCodeUpfront).toBe(false);
    expect(sizes.full.lazy).toBeGreaterThan(300); // the delivery chunk exists and is loaded only with `post`
  });

  it('the entries of their own (tcf, diagnose, element, react, vue, svelte) and the consent chunk add no byte to the minimal path', () => {
    expect(sizes.minimal.entriesUpfront).toEqual([]);
  });

  it('the message texts are a chunk of their own, loaded only on failure', () => {
    expect(sizes.minimal.messagesUpfront).toBe(false);
    expect(sizes.umd.messagesInside).toBe(false); // the UMD file imports them from beside it
    expect(sizes.messages.gzip).toBeGreaterThan(800);
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
