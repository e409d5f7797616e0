// What a process notes of its jobs (src/server/endpoint/noted-jobs.ts): bounded, the one
// noted longest ago dropped first, so that jobs ended elsewhere never grow it for good.
import { describe, expect, it } from 'vitest';
import { NOTED_JOBS_MAX, NotedJobs } from '../../../src/server/endpoint/noted-jobs.js';

describe('NotedJobs', () => {
  it('holds at most its max, dropping the job noted longest ago; a job noted again is the newest', () => {
    const notes = new NotedJobs<number>(2);
    notes.set('a', 1).set('b', 1);
    notes.set('a', 2);
    notes.set('c', 1);
    expect([...notes]).toEqual([
      ['a', 2],
      ['c', 1],
    ]);
  });

  it('by default, a hundred thousand', () => {
    const notes = new NotedJobs<number>();
    for (let i = 0; i <= NOTED_JOBS_MAX; i++) notes.set(`k${i}`, i);
    expect([notes.size, notes.has('k0'), notes.has(`k${NOTED_JOBS_MAX}`)]).toEqual([NOTED_JOBS_MAX, false, true]);
  });
});
