/**
 * The one bound on what a process remembers in memory of its sources and jobs: a Map that
 * holds at most `max` entries, the one set longest ago dropped first. Its users: the
 * admission buckets per source (admission.ts), the jobs a process noted (queued.ts: their
 * failed tries, their last failure; a job that failed here and ended on another instance is
 * never dropped otherwise), and the outcome reports already told (reports.ts).
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(private readonly max: number) {
    super();
  }

  /** Sets `key` as the newest entry (set again, it moves last), then drops the oldest past `max`. */
  override set(key: K, value: V): this {
    this.delete(key);
    super.set(key, value);
    if (this.size > this.max) this.delete(this.keys().next().value!);
    return this;
  }
}
