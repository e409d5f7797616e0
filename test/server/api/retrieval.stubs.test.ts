// The retrieval API (src/server/api/retrieval.ts) on a stub call: ids checked before they go
// into a URL, reads with the access token, and the polling schedule's ends.
import { describe, expect, it } from 'vitest';
import type { Call, CallInit } from '../../../src/server/api/call.js';
import { createRetrieval } from '../../../src/server/api/retrieval.js';
import type { RateLimiter } from '../../../src/server/api/rate-limit.js';
import type { TokenSource } from '../../../src/server/api/token-source.js';
import type { Sleep } from '../../../src/server/time/clock.js';
import { ACCOUNT, EXECUTION } from '../../support/api-shapes.js';

const IDS = { accountId: ACCOUNT, workflowExecutionId: EXECUTION };
const limiter = { windowMs: 1 } as RateLimiter;

/** A retrieval whose calls answer each status of `statuses` in turn (the last repeats). */
function retrieval(statuses: string[], sleep: Sleep = async () => {}) {
  const calls: Array<{ operation: string; url: string; init: CallInit }> = [];
  const call: Call = async (operation, url, init) => {
    calls.push({ operation, url, init });
    if (operation === 'details') return Response.json({ workflow: { status: 'PROCESSED' } });
    const status = statuses[Math.min(calls.length - 1, statuses.length - 1)];
    return Response.json({ workflowExecution: { status } });
  };
  const tokenSource = { getToken: async () => 'at-1' } as unknown as TokenSource;
  const made = createRetrieval({
    call,
    tokenSource,
    retrievalBase: new URL('https://retrieval.example'),
    limiter,
    sleep,
  });
  return { ...made, calls };
}

describe('reads', () => {
  it('status and details go with the access token (renewed when refused), under the retrieval limit', async () => {
    const r = retrieval(['PROCESSED']);
    await r.status(IDS);
    await r.details(IDS);
    for (const { init } of r.calls) {
      expect(init).toMatchObject({ method: 'GET', accessToken: true, limiter });
      expect(await init.bearer()).toBe('at-1');
    }
    expect(r.calls.map((c) => c.url)).toEqual([
      `https://retrieval.example/api/v1/accounts/${ACCOUNT}/workflow-executions/${EXECUTION}/status`,
      `https://retrieval.example/api/v1/accounts/${ACCOUNT}/workflow-executions/${EXECUTION}`,
    ]);
  });

  it('an id that is no string is refused before any call, even one whose text is a UUID', async () => {
    const r = retrieval(['PROCESSED']);
    const disguised = { toString: () => ACCOUNT } as unknown as string;
    await expect(r.details({ accountId: disguised, workflowExecutionId: EXECUTION })).rejects.toMatchObject({
      code: 'invalid_configuration',
      operation: 'details',
    });
    expect(r.calls).toHaveLength(0);
  });
});

describe('waitForResult', () => {
  it('reads the status on the schedule until PROCESSED, then answers the details', async () => {
    const waits: number[] = [];
    const r = retrieval(['PENDING', 'PROCESSED'], async (ms) => void waits.push(ms));
    await expect(r.waitForResult(IDS, { schedule: [1, 3, 6] })).resolves.toBeDefined();
    expect(r.calls.map((c) => c.operation)).toEqual(['status', 'status', 'details']);
    expect(waits).toEqual([1000, 2000]);
  });

  it('still pending after the schedule: result_not_ready names the last status and the reads, at most 10', async () => {
    const r = retrieval(['FINALIZED']);
    const schedule = Array.from({ length: 12 }, (_, i) => i);
    const error = await r.waitForResult(IDS, { schedule }).then(
      () => new Error('not refused'),
      (e: unknown) => e as Error,
    );
    expect(error).toMatchObject({ code: 'result_not_ready' });
    expect(error.message).toContain('still FINALIZED after 10 reads');
  });

  it('an empty schedule reads nothing: result_not_ready, the status unknown', async () => {
    const r = retrieval(['PROCESSED']);
    const error = await r.waitForResult(IDS, { schedule: [] }).then(
      () => new Error('not refused'),
      (e: unknown) => e as Error,
    );
    expect(error).toMatchObject({ code: 'result_not_ready' });
    expect(error.message).toContain('still unknown after 0 reads');
    expect(r.calls).toHaveLength(0);
  });

  it('a signal aborted already: no wait and no read', async () => {
    const waits: number[] = [];
    const r = retrieval(['PROCESSED'], async (ms) => void waits.push(ms));
    await expect(r.waitForResult(IDS, { signal: AbortSignal.abort(), schedule: [5] })).rejects.toMatchObject({
      code: 'aborted',
    });
    expect(waits).toEqual([]);
    expect(r.calls).toHaveLength(0);
  });

  it('without a signal, a failing sleep is passed on as it is', async () => {
    const failure = new Error('timer broke');
    const r = retrieval(['PROCESSED'], async () => Promise.reject(failure));
    await expect(r.waitForResult(IDS, { schedule: [1] })).rejects.toBe(failure);
  });
});
