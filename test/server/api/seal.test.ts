// The reference tag the kit puts in userReference and finds again in a callback.
import { describe, expect, it } from 'vitest';
import { createReferenceTagger } from '../../../src/server/api/seal.js';

describe('createReferenceTagger', () => {
  const tagger = createReferenceTagger('client-1', 'secret-1');

  it('makes references it vouches for, within the service’s 100 characters, each new', async () => {
    const [a, b] = [await tagger.tag(), await tagger.tag()];
    expect(a).toMatch(/^bbc1\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{22}$/);
    expect(a.length).toBeLessThanOrEqual(100);
    expect(a).not.toBe(b);
    expect(await tagger.vouches(a)).toBe(true);
  });

  it('vouches for nothing made with another secret or client, altered, or of another form', async () => {
    const tag = await tagger.tag();
    const [, nonce, mac] = tag.split('.');
    const flipped = `${mac!.slice(0, -1)}${mac!.endsWith('A') ? 'B' : 'A'}`;
    for (const other of [
      await createReferenceTagger('client-1', 'secret-2').tag(),
      await createReferenceTagger('client-2', 'secret-1').tag(),
      `bbc1.${nonce}.${flipped}`,
      `bbc1.${nonce}.${mac}.x`,
      `bbc1.${nonce}`,
      `bbc1..${mac}`,
      `bbc2.${nonce}.${mac}`,
      `bbc1.${nonce}.${mac!.slice(0, -1)}`,
      'user-1',
      '',
      undefined,
      42,
    ])
      expect(await tagger.vouches(other)).toBe(false);
  });
});
