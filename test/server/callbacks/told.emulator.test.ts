// The real flow on the emulator, both paths wired: the endpoint's queued check with onResult,
// and the service's callbacks reaching a callback handler on a real socket. Each checkout's
// decision is told once, whichever path brings it first, with the order's references.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';
import {
  createCallbackHandler,
  createDeviceRiskHandler,
  createMemoryQueue,
  createMemoryStore,
  toNodeHandler,
  type CallbackHandler,
  type DeviceRiskHandler,
} from '../../../src/server/index.js';
import { closeServers, serve } from '../../support/http.js';
import { checkoutFor, clientOn, SHOP } from '../../support/kit.js';

let emulator: Emulator | undefined;
const handlers: Array<CallbackHandler | DeviceRiskHandler> = [];
afterEach(async () => {
  for (const handler of handlers.splice(0)) await handler.close();
  await closeServers();
  await emulator?.close();
  emulator = undefined;
});

interface Told {
  path: 'callback' | 'queue';
  workflowExecutionId: string;
  customerInternalReference?: string;
  userReference?: string;
  /** The checkout's Idempotency-Key: both paths name it (the callback's from told.ts's memory). */
  reference?: string;
}

describe('each decision told once per execution, on the emulator', () => {
  it.each([
    // The callbacks come first: the queued check calls nothing.
    ['callbacks as the service sends them', {}],
    // The queued check tells first: the callbacks call nothing.
    ['callbacks late, after the queued check', { delayMs: 300 }],
  ])('N checkouts, both paths wired, %s: onResult N times, with the orders', async (_, faults) => {
    const N = 6;
    emulator = await startEmulator({ accountRequestsPerSecond: 0 });
    emulator.faults.callbacks(faults);
    const client = clientOn(emulator, {
      maxAttempts: 1,
      // The emulator's account limit is off: so is the client's.
      limits: { accountRequestsPerSecond: 100, accountBurst: 100 },
    });
    const store = createMemoryStore();
    const told: Told[] = [];
    const errors: unknown[] = [];
    const callbacks = createCallbackHandler({
      client,
      store,
      allowedSources: ['127.0.0.0/8', '::1'],
      retryDelayMs: 5,
      onError: (error) => errors.push(error),
      onResult: ({ workflowExecutionId, customerInternalReference, userReference, reference }) =>
        void told.push({ path: 'callback', workflowExecutionId, customerInternalReference, userReference, reference }),
    });
    handlers.push(callbacks);
    const callbackOrigin = await serve(toNodeHandler(callbacks));
    const queue = createMemoryQueue({ concurrency: 2 });
    const endpoint = createDeviceRiskHandler({
      client,
      store,
      queue,
      allowedOrigins: [SHOP],
      workflowKey: 10020,
      callbackUrl: `${callbackOrigin}/callback`,
      checkoutsPerAddress: false,
      checkoutsPerCustomer: false,
      resolveCustomer: (request) => {
        const order = request.headers.get('x-order')!;
        return { customerInternalReference: order, userReference: `user-of-${order}` };
      },
      onError: (error) => errors.push(error),
      onResult: (details, { customerInternalReference, userReference, reference }) =>
        void told.push({
          path: 'queue',
          workflowExecutionId: details.workflowExecutionId,
          customerInternalReference,
          userReference,
          reference,
        }),
    });
    handlers.push(endpoint);

    for (let n = 1; n <= N; n++) {
      const answer = await endpoint(checkoutFor(`key-000000000${n}`, { order: `order-${n}` }));
      expect(answer.status).toBe(202);
    }
    await queue.idle();
    // Every callback sent and handled (recorded done, or told).
    await expect.poll(() => emulator!.inspect.callbacks().filter((c) => c.delivered)).toHaveLength(N);
    await callbacks.idle();
    await expect
      .poll(async () => {
        await callbacks.sweep();
        await callbacks.idle();
        return told.length;
      })
      .toBeGreaterThanOrEqual(N);
    // Settled: nothing more comes.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await callbacks.idle();
    expect(told).toHaveLength(N);
    const executions = emulator.inspect.transactions().map((tx) => tx.workflowExecutionId.toLowerCase());
    expect(new Set(told.map((t) => t.workflowExecutionId.toLowerCase()))).toEqual(new Set(executions));
    for (const tx of emulator.inspect.transactions()) {
      const entry = told.find((t) => t.workflowExecutionId.toLowerCase() === tx.workflowExecutionId.toLowerCase());
      expect(entry).toMatchObject({
        customerInternalReference: tx.customerInternalReference,
        userReference: `user-of-${tx.customerInternalReference}`,
        reference: `key-000000000${tx.customerInternalReference.slice('order-'.length)}`,
      });
    }
    expect(errors).toEqual([]);
    // The callbacks first: they told every decision, each with its checkout's reference.
    if (!('delayMs' in faults)) expect(told.every((t) => t.path === 'callback')).toBe(true);
  });
});
