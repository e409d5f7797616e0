/**
 * The file queue's rows (file.ts): its jobs, the visitors' turns (the signed-in ones first) and the tenant's pause, in
 * the data directory's SQLite file. Every change is one transaction, so that two processes on
 * the file never claim one job, never both add one key, and never count past maxQueued.
 */
import type { Now } from '../time/clock.js';
import type { Connection, Database } from '../sqlite/database.js';
import { boundFor, type AddResult, type CheckJob, type QueueCounts } from './queue.js';

/** How long a job run to its end is kept (its key answered `present`): the Idempotency-Key's day. */
const DONE_KEPT_MS = 24 * 3_600_000;

export const QUEUE_SCHEMA = `
CREATE TABLE IF NOT EXISTS queue_jobs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  key TEXT NOT NULL UNIQUE,
  fingerprint TEXT NOT NULL,
  job TEXT NOT NULL,
  visitor TEXT NOT NULL,
  accepted_at INTEGER NOT NULL,
  not_before INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_until INTEGER NOT NULL DEFAULT 0,
  done_at INTEGER
);
CREATE INDEX IF NOT EXISTS queue_jobs_held ON queue_jobs (done_at, visitor, seq);
CREATE TABLE IF NOT EXISTS queue_visitors (visitor TEXT PRIMARY KEY, served INTEGER NOT NULL, turn INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS queue_pause (id INTEGER PRIMARY KEY CHECK (id = 1), until INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS queue_signed_in (visitor TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS queue_reading (key TEXT PRIMARY KEY) WITHOUT ROWID;
`;

/**
 * The next job due, in turns: the signed-in visitors' (queue_signed_in) before every other's;
 * within each, a visitor's n-th held job (running ones count) after every visitor's (n-1)-th;
 * within a round, the visitors none of whose jobs finished yet in the order they came, then the
 * others, served longest ago first (as the memory queue, queue.ts).
 */
const NEXT = `
WITH held AS (
  SELECT seq, key, job, visitor, not_before, lease_until,
         ROW_NUMBER() OVER (PARTITION BY visitor ORDER BY seq) AS round
  FROM queue_jobs WHERE done_at IS NULL
)
SELECT held.key AS key, held.job AS job FROM held JOIN queue_visitors v ON v.visitor = held.visitor
WHERE held.lease_until <= ?1 AND held.not_before <= ?1
  AND ?1 >= COALESCE((SELECT until FROM queue_pause WHERE id = 1), 0)
ORDER BY held.visitor NOT IN (SELECT visitor FROM queue_signed_in), held.round, v.served, v.turn, held.seq
LIMIT 1`;

/**
 * The rows of the checks waiting: held, and not only reading a decision (CheckJob.reading: the
 * count in the job's JSON, the key in queue_reading, which counting reads without parsing a job).
 */
const WAITING = `done_at IS NULL AND key NOT IN (SELECT key FROM queue_reading)`;
/** How many: the held less the held reading (a few), each counted from its index, never row by row. */
const COUNT_WAITING = `(SELECT COUNT(*) FROM queue_jobs WHERE done_at IS NULL) - (SELECT COUNT(*) FROM queue_reading r JOIN queue_jobs j ON j.key = r.key WHERE j.done_at IS NULL)`;

const visitorOf = (job: CheckJob) => (job.visitor === undefined ? `job ${job.key}` : `visitor ${job.visitor}`);

export function queueRows(db: Database, now: Now) {
  /** The visitor's place once one of its jobs finished: behind every other (or gone, with none left). */
  function served(c: Connection, visitor: string): void {
    const left = c.prepare('SELECT 1 FROM queue_jobs WHERE visitor = ? AND done_at IS NULL LIMIT 1').get(visitor);
    if (!left) {
      c.prepare('DELETE FROM queue_visitors WHERE visitor = ?').run(visitor);
      c.prepare('DELETE FROM queue_signed_in WHERE visitor = ?').run(visitor);
    } else
      c.prepare(
        'UPDATE queue_visitors SET served = 1, turn = (SELECT COALESCE(MAX(turn), 0) + 1 FROM queue_visitors) WHERE visitor = ?',
      ).run(visitor);
  }

  return {
    add(job: CheckJob, maxQueued: number, lateAt?: number): AddResult {
      return db.transaction('the queue took a checkout', (c) => {
        const present = c.prepare('SELECT fingerprint FROM queue_jobs WHERE key = ?').get(job.key);
        if (present) return present.fingerprint === job.fingerprint ? 'present' : 'conflict';
        const { queued } = c.prepare(`SELECT ${COUNT_WAITING} AS queued`).get()!;
        if (Number(queued) >= boundFor(job, maxQueued, lateAt)) return 'full';
        const visitor = visitorOf(job);
        c.prepare('INSERT INTO queue_jobs (key, fingerprint, job, visitor, accepted_at) VALUES (?, ?, ?, ?, ?)').run(
          job.key,
          job.fingerprint,
          JSON.stringify(job),
          visitor,
          job.acceptedAt,
        );
        c.prepare(
          'INSERT OR IGNORE INTO queue_visitors (visitor, served, turn) VALUES (?, 0, (SELECT COALESCE(MAX(turn), 0) + 1 FROM queue_visitors))',
        ).run(visitor);
        if (job.lane === 'signed-in')
          c.prepare('INSERT OR IGNORE INTO queue_signed_in (visitor) VALUES (?)').run(visitor);
        return 'added';
      });
    },
    /** The next job due, leased to `owner` for `leaseMs`; undefined when none is due. */
    claim(owner: string, leaseMs: number): CheckJob | undefined {
      // Looked for first without the writer's lock: a poll that finds nothing due takes none.
      const due = db.statement('the queue looked for a job', (c) =>
        c
          .prepare(
            'SELECT 1 FROM queue_jobs WHERE done_at IS NULL AND lease_until <= ?1 AND not_before <= ?1 AND ?1 >= COALESCE((SELECT until FROM queue_pause WHERE id = 1), 0) LIMIT 1',
          )
          .get(now()),
      );
      if (!due) return undefined;
      return db.transaction('the queue took its next job', (c) => {
        const at = now();
        const next = c.prepare(NEXT).get(at);
        if (!next) return undefined;
        c.prepare('UPDATE queue_jobs SET lease_owner = ?, lease_until = ? WHERE key = ?').run(
          owner,
          at + leaseMs,
          String(next.key),
        );
        return JSON.parse(String(next.job)) as CheckJob;
      });
    },
    renew(key: string, owner: string, leaseMs: number): void {
      db.statement('the queue renewed a lease', (c) =>
        c
          .prepare('UPDATE queue_jobs SET lease_until = ? WHERE key = ? AND lease_owner = ? AND done_at IS NULL')
          .run(now() + leaseMs, key, owner),
      );
    },
    renewQuietly(key: string, owner: string, leaseMs: number): void {
      try {
        this.renew(key, owner, leaseMs);
      } catch {
        // The lease lapses if the file stays unusable: another process then runs the job again.
      }
    },
    /** The job ran to its end: kept as done (its key stays taken), the visitor's turn passes. */
    finish(key: string, owner: string): void {
      db.transaction('the queue marked a job done', (c) => {
        const at = now();
        const row = c
          .prepare('SELECT visitor FROM queue_jobs WHERE key = ? AND lease_owner = ? AND done_at IS NULL')
          .get(key, owner);
        if (!row) return;
        c.prepare('UPDATE queue_jobs SET done_at = ?, lease_owner = NULL, lease_until = 0, job = ? WHERE key = ?').run(
          at,
          '{}',
          key,
        );
        c.prepare('DELETE FROM queue_reading WHERE key = ?').run(key);
        served(c, String(row.visitor));
        c.prepare('DELETE FROM queue_jobs WHERE done_at IS NOT NULL AND done_at <= ?').run(at - DONE_KEPT_MS);
      });
    },
    /**
     * The job comes back after `retryInMs` (all jobs, with `pause`: the tenant's limit), as
     * `job` when given (what its next run needs to know: CheckJob.givenUp, CheckJob.reading).
     */
    retry(key: string, owner: string, retryInMs: number, pause: boolean, job?: CheckJob): void {
      db.transaction('the queue put a job back', (c) => {
        const due = now() + retryInMs;
        if (job)
          c.prepare('UPDATE queue_jobs SET job = ? WHERE key = ? AND lease_owner = ?').run(
            JSON.stringify(job),
            key,
            owner,
          );
        if (job?.reading !== undefined)
          c.prepare(
            'INSERT OR IGNORE INTO queue_reading (key) SELECT key FROM queue_jobs WHERE key = ? AND lease_owner = ? AND done_at IS NULL',
          ).run(key, owner);
        c.prepare(
          'UPDATE queue_jobs SET not_before = ?, lease_owner = NULL, lease_until = 0 WHERE key = ? AND lease_owner = ?',
        ).run(due, key, owner);
        if (pause)
          c.prepare(
            'INSERT INTO queue_pause (id, until) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET until = MAX(until, excluded.until)',
          ).run(due);
      });
    },
    counts(): QueueCounts {
      const row = db.statement('the queue counted its jobs', (c) =>
        c
          .prepare(
            `SELECT ${COUNT_WAITING} AS queued, (SELECT accepted_at FROM queue_jobs WHERE ${WAITING} ORDER BY seq LIMIT 1) AS oldest`,
          )
          .get(),
      )!;
      return { queued: Number(row.queued), oldestAcceptedAt: row.oldest === null ? undefined : Number(row.oldest) };
    },
    close: () => db.close(),
  };
}
