// Finalize (src/server/api/finalize.ts) on a stub call: a 409 is done only when the status
// says PROCESSED, passing trouble when it says ACQUIRED, and only a 409: any other failure
// stands, whatever the status says.
import { describe, expect, it } from 'vitest';
import type { Call, CallInit } from '../../../src/server/api/call.js';
import { createFinalize } from '../../../src/server/api/finalize.js';
import { createTransactions } from '../../../src/server/api/transaction.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { isPermanent } from '../../../src/server/endpoint/failure-answer.js';
import { BASE, EXECUTION_URL, T0, transactionAt } from '../../support/api-shapes.js';

const transaction = transactionAt(T0);

function finalize(failure: DeviceRiskError, statusRead: () => Promise<string>) {
  const reads: number[] = [];
  const call: Call = async () => Promise.reject(failure);
  const run = createFinalize(
    call,
    createTransactions(new URL(BASE), () => T0, 30_000),
    'PUT',
    async () => {
      reads.push(1);
      return statusRead();
    },
  );
  return { run: () => run(transaction), reads };
}

describe('finalize', () => {
  it('a 409 with the status PROCESSED is done', async () => {
    const conflict = new DeviceRiskError('request_rejected', 'conflict', { status: 409 });
    await expect(finalize(conflict, async () => 'PROCESSED').run()).resolves.toBeUndefined();
  });

  it('a 409 with the status ACQUIRED (finalized, or about to be) is trouble that passes, never a refusal for good', async () => {
    const conflict = new DeviceRiskError('request_rejected', 'conflict', { status: 409 });
    const error = await finalize(conflict, async () => 'ACQUIRED')
      .run()
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'result_not_ready', operation: 'finalize', retryAfter: 1, cause: conflict });
    expect((error as Error).message).toContain('ACQUIRED');
    expect(isPermanent(error)).toBe(false);
    expect(isPermanent(conflict)).toBe(true);
  });

  it('any other failure stands, even when the status says PROCESSED, and no status is read for it', async () => {
    const failure = new DeviceRiskError('upstream_error', 'down', { status: 500 });
    const { run, reads } = finalize(failure, async () => 'PROCESSED');
    await expect(run()).rejects.toBe(failure);
    expect(reads).toEqual([]);
  });

  it.each(['INITIATED', 'SESSION_EXPIRED', 'TOKEN_EXPIRED', 'A_STATUS_THE_SERVICE_ADDS'])(
    'a 409 with the status %s stands as the 409',
    async (now) => {
      const conflict = new DeviceRiskError('request_rejected', 'conflict', { status: 409 });
      await expect(finalize(conflict, async () => now).run()).rejects.toBe(conflict);
    },
  );

  it("a 409 whose status read fails: the read's failure stands, to be tried again, not a refusal", async () => {
    const conflict = new DeviceRiskError('request_rejected', 'conflict', { status: 409 });
    const away = new DeviceRiskError('rate_limited', 'status answered 429', { status: 429, retryAfter: 1 });
    await expect(finalize(conflict, async () => Promise.reject(away)).run()).rejects.toBe(away);
  });

  it('sends the method asked for to the finalize address, with the transaction token, retried on failure', async () => {
    const calls: Array<{ url: string; init: CallInit; repeatable: boolean }> = [];
    const call: Call = async (_operation, url, init, repeatable) => {
      calls.push({ url, init, repeatable });
      return new Response(null, { status: 204 });
    };
    const transactions = createTransactions(new URL(BASE), () => T0, 30_000);
    await createFinalize(call, transactions, 'POST', async () => 'PROCESSED')(transaction);
    expect(calls).toMatchObject([{ url: EXECUTION_URL, init: { method: 'POST' }, repeatable: true }]);
    expect(await calls[0]!.init.bearer()).toBe('tx-token');
  });
});
