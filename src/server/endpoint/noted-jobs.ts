/**
 * What a process notes of the jobs it runs (queued.ts: their failed tries, their last failure),
 * dropped when a job ends here. A job that failed here and ended on another instance (a fleet,
 * or processes on one data directory) is never dropped so: past `max` notes, the oldest goes.
 */

/** Jobs noted at most: about 10 MB of notes. */
export const NOTED_JOBS_MAX = 100_000;

/** A Map of job keys that holds at most `max` entries, the one noted longest ago dropped first. */
export class NotedJobs<V> extends Map<string, V> {
  constructor(private readonly max = NOTED_JOBS_MAX) {
    super();
  }

  override set(key: string, value: V): this {
    // Noted again: the newest, so that the oldest dropped is one no run has touched for longest.
    this.delete(key);
    super.set(key, value);
    if (this.size > this.max) this.delete(this.keys().next().value!);
    return this;
  }
}
