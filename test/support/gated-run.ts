// A queue's run for the tests of the queues (test/server/queue/): every job it is given waits
// until the test lets it finish, with the result the test gives.
import type { CheckJob, JobRun } from '../../src/server/queue/queue.js';

export function gatedRun() {
  /** The keys of the jobs run, in the order they started. */
  const started: string[] = [];
  const gates = new Map<string, (result: JobRun) => void>();
  const run = (j: CheckJob) =>
    new Promise<JobRun>((resolve) => {
      started.push(j.key);
      gates.set(j.key, resolve);
    });
  /** Lets the job of `key` finish with `result`, at once. */
  const release = (key: string, result: JobRun = { done: true }) => {
    gates.get(key)!(result);
    gates.delete(key);
  };
  /** The same, then a turn of the timers: what the queue does next has begun. */
  const finish = async (key: string, result: JobRun = { done: true }) => {
    release(key, result);
    await new Promise((r) => setTimeout(r, 0));
  };
  return { run, started, release, finish };
}
