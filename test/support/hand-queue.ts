// A check queue on no store, for the endpoint's queued-check tests: it keeps the jobs it is
// given, answers each add as the test says, and runs a job only when the test asks.
import type { CheckJob, CheckQueue, JobRun } from '../../src/server/index.js';
import type { AddResult, QueueCounts } from '../../src/server/queue/queue.js';

/**
 * A queue that holds nothing itself: each add keeps the job in `jobs` and answers
 * `state.answer` ('added' at first); `run(job)` runs it through the handler's runner; its
 * counts are `counts(jobs)` (none queued by default).
 */
export function handQueue(
  counts: (jobs: readonly CheckJob[]) => Promise<QueueCounts> = async () => ({
    queued: 0,
    oldestAcceptedAt: undefined,
  }),
) {
  let run!: (job: CheckJob) => Promise<JobRun>;
  const jobs: CheckJob[] = [];
  const state = { answer: 'added' as AddResult };
  const queue: CheckQueue = {
    add: async (job) => {
      jobs.push(job);
      return state.answer;
    },
    process: (runner) => void (run = runner),
    counts: () => counts(jobs),
    close: async () => {},
  };
  return { queue, jobs, state, run: (job: CheckJob) => run(job) };
}

/** Counts of a hand queue that says how many jobs it was given, none of them with an age. */
export const givenJobs = async (jobs: readonly CheckJob[]): Promise<QueueCounts> => ({
  queued: jobs.length,
  oldestAcceptedAt: undefined,
});
