// The blackbox check before an upload (src/server/api/upload.ts): only a non-empty string of
// the blackbox alphabet, however its text reads.
import { describe, expect, it } from 'vitest';
import { checkBlackbox } from '../../../src/server/api/upload.js';

describe('checkBlackbox', () => {
  it.each([
    ['a number whose digits are in the alphabet', 12345],
    ['an object whose text is a blackbox', { toString: () => 'AAAA' }],
  ])('refuses %s: invalid_blackbox', (_, value) => {
    expect(() => checkBlackbox(value)).toThrow(expect.objectContaining({ code: 'invalid_blackbox' }));
  });

  it('returns a blackbox as it is', () => {
    expect(checkBlackbox('AB+/@cd==')).toBe('AB+/@cd==');
  });
});
