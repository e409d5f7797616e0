// Delivering one recorded callback, alone: the backoff written into the record, giving up
// after retryForMs, and an execution the service does not know, forgotten.
import { describe, expect, it, vi } from 'vitest';
import { callbackDelivery } from '../../../src/server/callbacks/delivery.js';
import { pendingList } from '../../../src/server/callbacks/pending.js';
import { callbackTasks } from '../../../src/server/callbacks/tasks.js';
import type { CallbackHandlerOptions } from '../../../src/server/callbacks/types.js';
import { DeviceRiskError, ResultUndeliveredError } from '../../../src/server/index.js';
import { takeLease } from '../../../src/server/store/lease.js';
import { callbackBody, EXECUTION, settingsFor, stubClient } from '../../support/callbacks.js';
import { createMemoryStore } from '../../../src/server/store/store.js';

async function deliveryOf(options: Partial<CallbackHandlerOptions>, record: Record<string, unknown> = {}) {
  const errors: unknown[] = [];
  const settings = settingsFor({ onError: (error) => errors.push(error), ...options });
  const pending = pendingList(settings.store, settings.namespace, settings.recordTtlMs, settings.now);
  const tasks = callbackTasks(settings.report);
  const deliver = callbackDelivery(settings, tasks, pending);
  await pending.add('k');
  const written = { state: 'pending', attempts: 0, receivedAt: settings.now(), callback: callbackBody(), ...record };
  await settings.store.set('k', JSON.stringify(written), settings.recordTtlMs);
  const stored = async () => JSON.parse((await settings.store.get('k')) ?? 'null') as Record<string, unknown> | null;
  return { deliver, tasks, errors, pending, stored, settings };
}

/** A memory store whose first read of a remembered order (told.ts) does not answer in time. */
function orderReadMissedOnce() {
  const memory = createMemoryStore();
  let orderReads = 0;
  return {
    ...memory,
    get: (key: string) =>
      key.includes(':order:') && ++orderReads === 1
        ? Promise.reject(new DeviceRiskError('store_unavailable', 'no answer within 3000 ms', { retryAfter: 1 }))
        : memory.get(key),
  };
}

describe('callbackDelivery', () => {
  it('writes the next try retryDelayMs doubled per attempt, at most maxRetryDelayMs, after a failure', async () => {
    const clock = 1000;
    const failing = () => Promise.reject(new Error('down'));
    const options = { onResult: failing, retryDelayMs: 100, maxRetryDelayMs: 300, now: () => clock };
    const third = await deliveryOf(options, { attempts: 2 });
    await third.deliver('k');
    expect(await third.stored()).toMatchObject({ attempts: 3, nextAttemptAt: clock + 300 });
    expect(third.tasks.hasRetry('k')).toBe(true);
    expect(third.errors).toEqual([new Error('down')]);
    await third.tasks.close();

    const second = await deliveryOf(options, { attempts: 1 });
    await second.deliver('k');
    expect(await second.stored()).toMatchObject({ attempts: 2, nextAttemptAt: clock + 200 });
    await second.tasks.close();
  });

  it('records done and unlists a callback onResult took, with its details', async () => {
    const results: unknown[] = [];
    const { deliver, stored, pending } = await deliveryOf({ onResult: (result) => void results.push(result) });
    await deliver('k');
    expect(await stored()).toMatchObject({ state: 'done' });
    expect(results).toMatchObject([{ status: 'PROCESSED', details: { status: 'PROCESSED' } }]);
    expect(await pending.entries()).toEqual([]);
  });

  it('gives up after retryForMs: failed, result_undelivered told once, unlisted', async () => {
    let clock = 0;
    const onResult = () => Promise.reject(new Error('down'));
    const { deliver, stored, errors, pending } = await deliveryOf({ onResult, retryForMs: 1000, now: () => clock });
    clock = 1000;
    await deliver('k');
    expect(await stored()).toMatchObject({ state: 'failed' });
    expect(errors).toMatchObject([{ code: 'result_undelivered' }]);
    expect(errors[0]).toBeInstanceOf(ResultUndeliveredError);
    expect(await pending.entries()).toEqual([]);
  });

  it('a give-up whose telling onError could not keep (its promise rejects): still pending, given up again next try', async () => {
    let clock = 0;
    let keeps = false;
    const told: unknown[] = [];
    const onError = (error: unknown) => {
      told.push(error);
      if (!(error instanceof ResultUndeliveredError) || keeps) return undefined;
      return Promise.reject(new DeviceRiskError('store_full', 'the outbox has no room'));
    };
    const onResult = () => Promise.reject(new Error('down'));
    const { deliver, stored, pending, tasks } = await deliveryOf({
      onResult,
      onError,
      retryForMs: 1000,
      now: () => clock,
    });
    clock = 1000;
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    // Its failure is logged (safeOnError), never thrown back into the delivery's task.
    await deliver('k');
    expect(logged.mock.calls.map(([line]) => String(line))).toEqual([
      expect.stringContaining('the outbox has no room'),
    ]);
    logged.mockRestore();
    expect(await stored()).toMatchObject({ state: 'pending' });
    expect(await pending.entries()).toHaveLength(1);
    keeps = true;
    await deliver('k');
    expect(await stored()).toMatchObject({ state: 'failed' });
    expect(await pending.entries()).toEqual([]);
    expect(told.map((error) => (error as DeviceRiskError).code)).toEqual(['result_undelivered', 'result_undelivered']);
    await tasks.close();
  });

  it("names the execution and, when a check remembered it, the order, for the shop's failure webhook", async () => {
    let clock = 0;
    const onResult = () => Promise.reject(new Error('down'));
    const { deliver, errors, settings } = await deliveryOf({ onResult, retryForMs: 1000, now: () => clock });
    const execution = callbackBody().workflowExecution.id;
    await settings.told.remember(execution, {
      reference: 'key-1',
      customerInternalReference: 'order-9',
      userReference: 'u-9',
    });
    clock = 1000;
    await deliver('k');
    expect(errors).toEqual([
      expect.objectContaining({
        code: 'result_undelivered',
        operation: 'callback',
        workflowExecutionId: execution,
        workflowStatus: 'PROCESSED',
        customerInternalReference: 'order-9',
        userReference: 'u-9',
      }),
    ]);
  });

  it('an order read the store does not answer: tried again later, then told with its order, never without it', async () => {
    const store = orderReadMissedOnce();
    const results: Array<{ customerInternalReference?: string }> = [];
    // An expiry: no details to name the order, only what the check remembered.
    const { deliver, stored, errors, settings, tasks } = await deliveryOf(
      { store, client: stubClient({ status: async () => 'SESSION_EXPIRED' }), onResult: (r) => void results.push(r) },
      { callback: callbackBody({ status: 'SESSION_EXPIRED' }) },
    );
    await settings.told.remember(EXECUTION, { reference: 'key-1', customerInternalReference: 'order-1' });
    await deliver('k');
    expect(results).toEqual([]);
    expect(errors).toMatchObject([{ code: 'store_unavailable' }]);
    expect(await stored()).toMatchObject({ state: 'pending', attempts: 1 });
    await deliver('k', true);
    expect(results).toMatchObject([{ customerInternalReference: 'order-1' }]);
    expect(await stored()).toMatchObject({ state: 'done' });
    await tasks.close();
  });

  it('a give-up whose order read the store does not answer: left pending, then told with its order', async () => {
    let clock = 0;
    const store = orderReadMissedOnce();
    const onResult = () => Promise.reject(new Error('down'));
    const { deliver, stored, errors, settings } = await deliveryOf({
      store,
      onResult,
      retryForMs: 1000,
      now: () => clock,
    });
    await settings.told.remember(EXECUTION, { reference: 'key-1', customerInternalReference: 'order-9' });
    clock = 1000;
    await expect(deliver('k')).rejects.toMatchObject({ code: 'store_unavailable' });
    expect(await stored()).toMatchObject({ state: 'pending' });
    expect(errors).toEqual([]);
    await deliver('k');
    expect(await stored()).toMatchObject({ state: 'failed' });
    expect(errors).toEqual([
      expect.objectContaining({ code: 'result_undelivered', customerInternalReference: 'order-9' }),
    ]);
  });

  it('forgets an execution the service does not know: record and entry gone, unknown_execution told', async () => {
    const details = () =>
      Promise.reject(new DeviceRiskError('request_rejected', '404', { status: 404, operation: 'details' }));
    const { deliver, stored, errors, pending } = await deliveryOf({
      client: stubClient({ details }),
      onResult: () => {},
    });
    await deliver('k');
    expect(await stored()).toBeNull();
    expect(errors).toMatchObject([{ code: 'unknown_execution', status: 404, operation: 'callback' }]);
    expect(await pending.entries()).toEqual([]);
  });

  it('leaves a record whose next try is not due to its timer, unless the timer is what calls', async () => {
    const results: unknown[] = [];
    const { deliver } = await deliveryOf(
      { onResult: (r) => void results.push(r), now: () => 0 },
      { nextAttemptAt: 50 },
    );
    await deliver('k');
    expect(results).toEqual([]);
    await deliver('k', true);
    expect(results).toHaveLength(1);
  });

  it("calls nothing while another instance holds the callback's lease", async () => {
    const results: unknown[] = [];
    const { deliver, settings } = await deliveryOf({ onResult: (r) => void results.push(r) });
    const other = await takeLease(settings.store, 'k:lease', settings.leaseMs, 'callback lease', settings.now);
    expect(other).toBeTruthy();
    await deliver('k');
    expect(results).toEqual([]);
    await other!.release();
    await deliver('k');
    expect(results).toHaveLength(1);
  });

  it('sets no retry timer when another instance changed the record meanwhile: it is theirs', async () => {
    const { deliver, tasks, settings, stored } = await deliveryOf({
      onResult: () => Promise.reject(new Error('down')),
    });
    const before = await settings.store.get('k');
    settings.store.compareAndSet = async () => false;
    await deliver('k');
    expect(tasks.hasRetry('k')).toBe(false);
    expect(JSON.stringify(await stored())).toBe(before);
  });
});
