// The check itself (src/server/endpoint/check.ts) on a stub client: what a status read that
// fails after finalize does, in the request (reported, the answer stays) and in the queue
// (thrown, so that the job comes back and the decision is still told).
import { describe, expect, it } from 'vitest';
import type { DeviceRiskDetails } from '../../../src/server/index.js';
// The endpoint's run of the check, with its plumbing (fence, progress), which the package does not export.
import { runCheck as runDeviceRiskCheck } from '../../../src/server/endpoint/check.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { ResultPending } from '../../../src/server/callbacks/told.js';
import { stubClient } from '../../support/stub-client.js';
import { counterValues } from '../../../src/server/status/tally.js';

const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
const away = () => new DeviceRiskError('rate_limited', 'status answered 429', { status: 429, retryAfter: 1 });

/** A stub client whose first `failures` status reads fail. */
function readsFailing(failures: number) {
  let left = failures;
  return stubClient({
    status: async () => {
      if (left-- > 0) throw away();
      return 'PROCESSED';
    },
  });
}

describe('a status read that fails after finalize', () => {
  it('with onResult and retryFailedResultRead: thrown, after the upload was saved; the resumed check tells the decision', async () => {
    const { client, calls } = readsFailing(1);
    const decided: DeviceRiskDetails[] = [];
    const saved: unknown[] = [];
    const progress = {};
    const options = {
      workflowKey: 1,
      progress,
      retryFailedResultRead: true,
      onProgress: (p: object) => void saved.push({ ...p }),
      onResult: (details: DeviceRiskDetails) => void decided.push(details),
    };
    await expect(
      runDeviceRiskCheck(client, BLACKBOX, { customerInternalReference: 'c' }, options),
    ).rejects.toMatchObject({ code: 'rate_limited', status: 429 });
    expect(decided).toEqual([]);
    expect(saved.at(-1)).toMatchObject({ uploaded: true });
    const result = await runDeviceRiskCheck(client, BLACKBOX, { customerInternalReference: 'c' }, options);
    expect(result).toEqual({ accountId: 'acc-1', workflowExecutionId: 'wf-1', status: 'PROCESSED' });
    expect(decided).toMatchObject([{ workflowExecutionId: 'wf-1' }]);
    // One transaction, one upload; finalize again (the service answers 409, finalize.ts reads the status).
    expect(calls).toEqual(['create', 'upload wf-1', 'finalize wf-1', 'finalize wf-1']);
  });

  it('with onResult alone (the request): reported as result_not_ready, the answer FINALIZED, nothing thrown', async () => {
    const { client } = readsFailing(1);
    const errors: unknown[] = [];
    const decided: unknown[] = [];
    const result = await runDeviceRiskCheck(
      client,
      BLACKBOX,
      { customerInternalReference: 'c' },
      { workflowKey: 1, onError: (e) => errors.push(e), onResult: (d) => void decided.push(d) },
    );
    expect(result.status).toBe('FINALIZED');
    expect(decided).toEqual([]);
    expect(errors).toMatchObject([{ code: 'result_not_ready' }]);
  });

  it('a finalize judged not yet checked: ResultPending for a queued check; within the request, its own error', async () => {
    const notReady = new DeviceRiskError('result_not_ready', 'finalize answered 409, ACQUIRED', {
      operation: 'finalize',
    });
    const other = new TypeError('fetch failed');
    const finalizing = (failure: unknown) => {
      const { client } = readsFailing(0);
      client.finalize = async () => {
        throw failure;
      };
      return client;
    };
    const run = (failure: unknown, retryFailedResultRead: boolean) =>
      runDeviceRiskCheck(finalizing(failure), BLACKBOX, { customerInternalReference: 'c' }, {
        workflowKey: 1,
        retryFailedResultRead,
        onResult: () => {},
      } as never);
    await expect(run(notReady, true)).rejects.toBeInstanceOf(ResultPending);
    await expect(run(notReady, false)).rejects.toBe(notReady);
    await expect(run(other, true)).rejects.toBe(other);
  });

  it('with retryFailedResultRead but no onResult: nothing waits for a decision, so the answer is FINALIZED', async () => {
    const { client } = readsFailing(1);
    const result = await runDeviceRiskCheck(
      client,
      BLACKBOX,
      { customerInternalReference: 'c' },
      { workflowKey: 1, retryFailedResultRead: true },
    );
    expect(result.status).toBe('FINALIZED');
  });
});

describe('the fence before onResult', () => {
  it('a fence that throws: no decision told, the check throws its error', async () => {
    const { client } = stubClient();
    const decided: unknown[] = [];
    const fenced = new DeviceRiskError('idempotency_key_in_use', 'taken over', { retryAfter: 1 });
    await expect(
      runDeviceRiskCheck(
        client,
        BLACKBOX,
        { customerInternalReference: 'c' },
        {
          workflowKey: 1,
          fence: async () => Promise.reject(fenced),
          onResult: (d) => void decided.push(d),
        },
      ),
    ).rejects.toBe(fenced);
    expect(decided).toEqual([]);
  });

  it('a fence that passes: called once, right before the decision is told', async () => {
    const { client, calls } = stubClient({
      details: async (tx) => {
        calls.push('details');
        return stubClient().client.details(tx);
      },
    });
    await runDeviceRiskCheck(
      client,
      BLACKBOX,
      { customerInternalReference: 'c' },
      { workflowKey: 1, fence: () => void calls.push('fence'), onResult: () => void calls.push('told') },
    );
    expect(calls.slice(-3)).toEqual(['details', 'fence', 'told']);
  });
});

describe("the execution's checkout, remembered for the callback (told.ts)", () => {
  const markers = (remember: (id: string, order: object) => Promise<void>) => ({
    remember,
    orderOf: () => Promise.resolve(undefined),
    claim: () => Promise.resolve('told' as const),
  });

  it('is remembered once the transaction exists, with the checkout it is for', async () => {
    const { client } = stubClient();
    const remembered: Array<[string, object]> = [];
    const result = await runDeviceRiskCheck(
      client,
      BLACKBOX,
      { customerInternalReference: 'c' },
      {
        workflowKey: 1,
        told: markers(async (id, order) => void remembered.push([id, order])),
        resultContext: { reference: 'key-1', customerInternalReference: 'c' },
      },
    );
    expect(remembered).toEqual([[result.workflowExecutionId, { reference: 'key-1', customerInternalReference: 'c' }]]);
  });

  it('a store away when it is remembered at the create: remembered by the attempt that resumes', async () => {
    const { client } = stubClient();
    const upload = client.uploadBlackbox;
    client.uploadBlackbox = () => Promise.reject(new DeviceRiskError('upstream_error', 'upload refused'));
    const progress = {};
    const remembered: string[] = [];
    let away = true;
    const told = markers(async (id) => {
      if (away) throw new DeviceRiskError('store_unavailable', 'the store is away');
      remembered.push(id);
    });
    let saves = 0;
    // Without onError: the store's failure never fails the check.
    const options = { workflowKey: 1, told, progress, onProgress: async () => void saves++ };
    await expect(runDeviceRiskCheck(client, BLACKBOX, { customerInternalReference: 'c' }, options)).rejects.toThrow(
      'upload refused',
    );
    expect([remembered, saves]).toEqual([[], 1]);
    away = false;
    client.uploadBlackbox = upload;
    const result = await runDeviceRiskCheck(client, BLACKBOX, { customerInternalReference: 'c' }, options);
    // Remembered on the resume; its progress saved once more, for the upload only.
    expect([remembered, saves]).toEqual([[result.workflowExecutionId], 2]);
  });

  it('a store away when it is remembered: told to onError, the check goes on', async () => {
    const { client } = stubClient();
    const errors: unknown[] = [];
    const away = new DeviceRiskError('store_unavailable', 'the store is away');
    const result = await runDeviceRiskCheck(
      client,
      BLACKBOX,
      { customerInternalReference: 'c' },
      {
        workflowKey: 1,
        told: markers(() => Promise.reject(away)),
        onError: (error) => void errors.push(error),
      },
    );
    expect(result.status).toBeDefined();
    expect(errors).toEqual([away]);
  });
});

describe('a decision told', () => {
  it('is counted by its type for the metrics (docs/operating.md#metrics-and-the-status-page), once told', async () => {
    const told = () =>
      counterValues()
        .filter((c) => c.metric === 'decisions')
        .reduce((n, c) => n + c.value, 0);
    const before = told();
    const { client } = readsFailing(0);
    await runDeviceRiskCheck(
      client,
      BLACKBOX,
      { customerInternalReference: 'c' },
      { workflowKey: 1, onResult: () => {} },
    );
    expect(told()).toBe(before + 1);
    // onResult threw: not told, not counted.
    await runDeviceRiskCheck(
      client,
      BLACKBOX,
      { customerInternalReference: 'c' },
      {
        workflowKey: 1,
        onResult: () => {
          throw new Error('busy');
        },
        onError: () => {},
      },
    );
    expect(told()).toBe(before + 1);
  });
});
