// Redis Cluster's hash tags (src/server/queue/hash-tag.ts): the part of a key that places it.
import { describe, expect, it } from 'vitest';
import { hashTagOf } from '../../../src/server/queue/hash-tag.js';

describe('hashTagOf', () => {
  it.each([
    ['{bbc}', 'bbc'],
    ['shop:{bbc}', 'bbc'],
    ['{a}{b}', 'a'],
    ['{}{b}', undefined],
    ['bull', undefined],
    ['{bull', undefined],
    ['bull}', undefined],
  ])('%s: %s', (key, tag) => expect(hashTagOf(key)).toBe(tag));
});
