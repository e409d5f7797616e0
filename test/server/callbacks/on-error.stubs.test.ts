// The integrator's onError at the callback receiver, when it fails itself (src/server/errors.ts,
// safeOnError): a throw or a rejection is logged and never thrown back into the receiver's
// tasks (no unhandled rejection, idle() settles), and a give-up it could not keep is told again.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createCallbackHandler,
  createMemoryStore,
  ResultUndeliveredError,
  type MemoryStoreOptions,
  type Store,
} from '../../../src/server/index.js';
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

/** Polls for what the handler does on its own (timers, work after a sweep): however long a busy machine takes. */
const until = (check: () => void) => vi.waitFor(check, { timeout: 5_000, interval: 5 });

/**
 * A memory store that counts the handler's deliveries of a callback: each runs from the claim
 * of the callback's lease to its release, or to the claim's refusal.
 */
function deliveriesSeen(options?: MemoryStoreOptions) {
  const memory = createMemoryStore(options);
  const isLease = (key: string) => key.endsWith(':lease');
  const seen = {
    started: 0,
    running: 0,
    store: {
      ...memory,
      setIfAbsent: async (key, value, ttlMs) => {
        if (!isLease(key)) return memory.setIfAbsent(key, value, ttlMs);
        seen.started++;
        seen.running++;
        const taken = await memory.setIfAbsent(key, value, ttlMs);
        if (!taken) seen.running--;
        return taken;
      },
      compareAndDelete: async (key, expected) => {
        const deleted = await memory.compareAndDelete(key, expected);
        if (isLease(key) && deleted) seen.running--;
        return deleted;
      },
    } as Store,
    /** Moves the clock on between two deliveries, never during one: each reads it once it holds its lease. */
    between: (move: () => void) =>
      until(() => {
        expect(seen.running).toBe(0);
        move();
      }),
    /**
     * Moves the clock on between deliveries, then waits for this instance's own retry timer (5 ms)
     * to deliver the callback once more, on the moved clock.
     */
    async ownRetryAfter(move: () => void) {
      let before = Infinity;
      await seen.between(() => {
        move();
        before = seen.started;
      });
      await until(() => expect(seen.started > before && seen.running === 0).toBe(true));
    },
  };
  return seen;
}

/** One turn of the event loop: a rejection left unhandled meanwhile has been reported by then. */
const aTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A callback whose onResult always fails: given up at the first sweep past retryForMs, then swept twice more. */
async function scenario(onError: (error: unknown) => unknown, waitForIdle = true) {
  const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  let clock = 1_000_000;
  const deliveries = deliveriesSeen();
  const handler = createCallbackHandler({
    client: stubClient(),
    allowedSources: 'any',
    onResult: () => Promise.reject(new Error('shop down')),
    onError,
    store: deliveries.store,
    retryForMs: 1000,
    retryDelayMs: 5,
    maxRetryDelayMs: 5,
    now: () => clock,
  });
  const idleErrors: unknown[] = [];
  const settle = async () => {
    if (waitForIdle) await handler.idle().catch((error: unknown) => void idleErrors.push(error));
    await until(() => expect(deliveries.running).toBe(0));
  };
  try {
    expect((await handler(post())).status).toBe(200);
    await settle();
    for (let sweep = 0; sweep < 3; sweep++) {
      const pastRetryFor = () => void (clock += 10 * 60_000); // past retryForMs and a lease
      // The first time, this instance's own retry timer (5 ms) runs: it gives up, and sets no other.
      if (sweep === 0) await deliveries.ownRetryAfter(pastRetryFor);
      else await deliveries.between(pastRetryFor);
      await handler.sweep().catch((error: unknown) => void idleErrors.push(error));
      await settle();
    }
    await handler.close();
    await aTurn();
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
    const deliveries = deliveriesSeen({ now: () => clock });
    const { store } = deliveries;
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
      const later = () => void (clock += 5 * 60_000); // an hour in all: twice recordTtlMs
      // The first time, this instance's own retry timer (5 ms) runs: it gives up, and sets no other.
      if (sweep === 0) await deliveries.ownRetryAfter(later);
      else await deliveries.between(later);
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
