// A check queue on no store, for the endpoint's queued-check tests: it keeps the jobs it is
// given, answers each add as the test says, and runs a job only when the test asks.
import type { CheckJob, CheckQueue, JobRun } from '../../src/server/index.js';
import { keptFor, type AddResult, type QueueCounts } from '../../src/server/queue/queue.js';

/**
 * A queue that holds nothing itself: each add keeps the job in `jobs` and answers
 * `state.answer` ('added' at first), its `lateAt` in `lateAts`; `run(job)` runs it through the handler's runner as every
 * queue does: a `givenUp` or `reading` in the result is kept with the job (in `jobs` too), and a job that
 * comes back at once (retryInMs 0) runs again at once; `runOnce(job)` runs it once. Its counts
 * are `counts(jobs)` (none queued by default).
 */
export function handQueue(
  counts: (jobs: readonly CheckJob[]) => Promise<QueueCounts> = async () => ({
    queued: 0,
    oldestAcceptedAt: undefined,
  }),
) {
  let run!: (job: CheckJob) => Promise<JobRun>;
  const jobs: CheckJob[] = [];
  /** The `lateAt` of each add, in order. */
  const lateAts: (number | undefined)[] = [];
  const state = { answer: 'added' as AddResult };
  const queue: CheckQueue = {
    add: async (job, lateAt) => {
      jobs.push(job);
      lateAts.push(lateAt);
      return state.answer;
    },
    process: (runner) => void (run = runner),
    counts: () => counts(jobs),
    close: async () => {},
  };
  async function runAsQueued(given: CheckJob): Promise<JobRun> {
    let job = given;
    for (;;) {
      const result = await run(job);
      if (result.done) return result;
      const kept = keptFor(job, result);
      if (kept) {
        const index = jobs.indexOf(job);
        if (index >= 0) jobs[index] = kept;
        job = kept;
      }
      if (!result.givenUp || result.retryInMs > 0) return result;
    }
  }
  return { queue, jobs, lateAts, state, run: runAsQueued, runOnce: (job: CheckJob) => run(job) };
}

/** Counts of a hand queue that says how many jobs it was given, none of them with an age. */
export const givenJobs = async (jobs: readonly CheckJob[]): Promise<QueueCounts> => ({
  queued: jobs.length,
  oldestAcceptedAt: undefined,
});
