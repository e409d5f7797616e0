// The one in-memory bound (src/server/endpoint/bounded-map.ts): at most `max` entries, the one
// set longest ago dropped first, so that sources and jobs never grow a process's memory for good.
import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../../src/server/endpoint/bounded-map.js';

describe('BoundedMap', () => {
  it('holds at most its max, dropping the entry set longest ago; an entry set again is the newest', () => {
    const notes = new BoundedMap<string, number>(2);
    notes.set('a', 1).set('b', 1);
    notes.set('a', 2);
    notes.set('c', 1);
    expect([...notes]).toEqual([
      ['a', 2],
      ['c', 1],
    ]);
  });

  it('at its max, keeps every entry', () => {
    const notes = new BoundedMap<number, number>(3);
    for (let i = 0; i < 3; i++) notes.set(i, i);
    expect([...notes.keys()]).toEqual([0, 1, 2]);
  });
});
