// The emulator-backed kit fixture: the emulators a file starts are closed after each test, and
// the endpoint it puts together is the app's: SHOP's checkouts, on a client of the emulator.
import { describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/emulator/index.js';
import { BLACKBOX, clientOn, handlerOn, handlerWith, oneAttempt, SHOP, useEmulators } from './kit.js';
import { stubClient } from './stub-client.js';

const startEmulator = useEmulators();
const started: Emulator[] = [];

const checkout = () =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': 'kit-key-0001' },
    body: JSON.stringify({ blackbox: BLACKBOX }),
  });

describe('the emulator-backed kit fixture', () => {
  it('handlerOn: a checkout of SHOP is one transaction on the emulator, its account rate limit off', async () => {
    const emulator = await startEmulator();
    started.push(emulator, await startEmulator());
    const handler = handlerOn(emulator, {
      client: oneAttempt(),
      resolveCustomer: () => ({ customerInternalReference: 'order-kit' }),
    });
    const answer = await handler(checkout());
    expect(answer.status).toBe(200);
    expect(emulator.inspect.transactions()).toMatchObject([
      { blackboxes: [BLACKBOX], customerInternalReference: 'order-kit' },
    ]);
  });

  it('every emulator the last test started was closed after it', async () => {
    expect(started).toHaveLength(2);
    for (const emulator of started)
      await expect(fetch(emulator.tokenUrl, { method: 'POST', signal: AbortSignal.timeout(5_000) })).rejects.toThrow();
  });

  it('oneAttempt: one attempt and no waits, the token source included; what is given goes over it', () => {
    const given = oneAttempt({ timeoutMs: 5, tokenSource: { userAgent: 'x' } });
    expect(given).toMatchObject({ maxAttempts: 1, timeoutMs: 5, tokenSource: { userAgent: 'x' } });
    expect([typeof given.sleep, typeof given.tokenSource?.sleep]).toEqual(['function', 'function']);
    expect(oneAttempt({ maxAttempts: 3 }).maxAttempts).toBe(3);
  });

  it("the account rate limit is off: more creates at once than the service's burst (10) all succeed", async () => {
    const emulator = await startEmulator();
    const client = clientOn(emulator, { maxAttempts: 1, limits: { accountRequestsPerSecond: 100, accountBurst: 100 } });
    const creates = Array.from({ length: 12 }, (_, i) =>
      client.createAccount({ customerInternalReference: `order-${i}`, workflowDefinition: { key: 10020 } }),
    );
    expect(await Promise.all(creates)).toHaveLength(12);
  });

  it('handlerOn and handlerWith take a client as it is: a stub, and the emulator is never called', async () => {
    const emulator = await startEmulator();
    const { client, creates } = stubClient();
    const onEmulator = handlerOn(emulator, {
      client,
      resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
    });
    expect((await onEmulator(checkout())).status).toBe(200);
    expect(creates()).toBe(1);
    expect((await handlerWith(client)(checkout())).status).toBe(200);
    expect(creates()).toBe(2);
    expect(emulator.inspect.requests('token')).toBe(0);
  });
});
