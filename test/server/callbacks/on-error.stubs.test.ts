// The integrator's onError at the callback receiver, when it fails itself (src/server/errors.ts,
// safeOnError): a throw or a rejection is logged and never thrown back into the receiver's
// tasks (no unhandled rejection, idle() settles), and a give-up it could not keep is told again.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createCallbackHandler, createMemoryStore, ResultUndeliveredError } from '../../../src/server/index.js';
import { pendingList } from '../../../src/server/callbacks/pending.js';
import { callbackNamespace, recordKey } from '../../../src/server/callbacks/record.js';
import { callbackBody, stubClient } from '../../support/callbacks.js';

afterEach(() => {
  vi.restoreAllMocks();
});

const post = () =>
  new Request('https://shop.test/callback', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(callbackBody()),
  });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A callback whose onResult always fails: given up at the first sweep past retryForMs, then swept twice more. */
async function scenario(onError: (error: unknown) => unknown, waitForIdle = true) {
  const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  let clock = 1_000_000;
  const handler = createCallbackHandler({
    client: stubClient(),
    allowedSources: 'any',
    onResult: () => Promise.reject(new Error('shop down')),
    onError,
    store: createMemoryStore(),
    retryForMs: 1000,
    retryDelayMs: 5,
    maxRetryDelayMs: 5,
    now: () => clock,
  });
  const idleErrors: unknown[] = [];
  const settle = async () => {
    if (waitForIdle) await handler.idle().catch((error: unknown) => void idleErrors.push(error));
    await pause(30);
  };
  try {
    expect((await handler(post())).status).toBe(200);
    await settle();
    for (let sweep = 0; sweep < 3; sweep++) {
      clock += 10 * 60_000; // past retryForMs and a lease
      await pause(20); // this instance's own retry timer (5 ms) runs
      await handler.sweep().catch((error: unknown) => void idleErrors.push(error));
      await settle();
    }
    await handler.close();
    await pause(30);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  return { unhandled, idleErrors, logged: logged.mock.calls.map(([line]) => String(line)) };
}

const kindOf = (error: unknown) => (error instanceof ResultUndeliveredError ? 'result_undelivered' : 'other');

describe("onError's own failures at the callback receiver", () => {
  it('a give-up onError could not keep (its promise rejects) is told again on a later sweep, nothing unhandled', async () => {
    const told: string[] = [];
    const { unhandled } = await scenario((error) => {
      told.push(kindOf(error));
      return error instanceof ResultUndeliveredError ? Promise.reject(new Error('outbox down')) : undefined;
    });
    expect(told.filter((kind) => kind === 'result_undelivered').length).toBeGreaterThanOrEqual(2);
    expect(unhandled).toEqual([]);
  });

  it('a give-up onError never keeps outlives recordTtlMs: the record and its entry live on, told at each try', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    let clock = 1_000_000;
    const store = createMemoryStore({ now: () => clock });
    const told: unknown[] = [];
    const handler = createCallbackHandler({
      client: stubClient(),
      allowedSources: 'any',
      onResult: () => Promise.reject(new Error('shop down')),
      onError: (error) => {
        told.push(error);
        return error instanceof ResultUndeliveredError ? Promise.reject(new Error('outbox down')) : undefined;
      },
      store,
      retryForMs: 1000,
      recordTtlMs: 30 * 60_000,
      retryDelayMs: 5,
      maxRetryDelayMs: 5,
      now: () => clock,
    });
    expect((await handler(post())).status).toBe(200);
    await handler.idle();
    for (let sweep = 0; sweep < 12; sweep++) {
      clock += 5 * 60_000; // an hour in all: twice recordTtlMs
      await pause(20);
      await handler.sweep();
      await handler.idle();
    }
    await handler.close();
    expect(told.filter((error) => error instanceof ResultUndeliveredError).length).toBeGreaterThanOrEqual(10);
    const namespace = callbackNamespace('client-1');
    const key = recordKey(namespace, callbackBody() as never);
    expect(await store.get(key)).toContain('"state":"pending"');
    const listed = await pendingList(store, namespace, 30 * 60_000, () => clock).entries();
    expect(listed.map((entry) => entry.key)).toEqual([key]);
  });

  it('an onError that rejects every time (its sink down): logged, never told its own error, nothing unhandled', async () => {
    const told: unknown[] = [];
    const { unhandled, idleErrors, logged } = await scenario(async (error) => {
      told.push(error);
      throw new Error('sink down');
    });
    expect(unhandled).toEqual([]);
    expect(idleErrors).toEqual([]);
    expect(told.some((error) => String(error).includes('sink down'))).toBe(false);
    expect(logged.some((line) => line.includes('sink down'))).toBe(true);
  });

  it.each([
    ['with idle() awaited', true],
    ['with nobody in idle() (a server in production)', false],
  ])(
    'an onError that throws every time, %s: the give-up still repeats, idle() settles, nothing unhandled',
    async (_, waitForIdle) => {
      const told: string[] = [];
      const { unhandled, idleErrors } = await scenario((error) => {
        told.push(kindOf(error));
        throw new Error('logger broke');
      }, waitForIdle);
      expect(told.filter((kind) => kind === 'result_undelivered').length).toBeGreaterThanOrEqual(2);
      expect(unhandled).toEqual([]);
      expect(idleErrors).toEqual([]);
    },
  );
});
