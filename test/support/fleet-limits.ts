// Four Device Risk clients (a fleet's instances) on one store, offered three times the
// service's account limit and three times its retrieval limit for a while, against the
// emulator at its default (the documented) limits: what the service refused, counted at
// each client's fetch.
import { expect } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import {
  createDeviceRiskClient,
  createTokenSource,
  type DeviceRiskTransaction,
  type Store,
} from '../../src/server/index.js';

const UA = 'AcmeShop Checkout/1.0';

export interface FleetLoad {
  /** Account requests that reached the service, and how many of them it answered 429. */
  accountRequests: number;
  accountRefused: number;
  /** Creates the clients refused themselves (`rate_limited`, no request sent). */
  accountWaitedOut: number;
  /** Status reads the clients refused themselves. */
  retrievalWaitedOut: number;
  retrievalRequests: number;
  retrievalRefused: number;
  /** The most retrievals sent within any one second. */
  retrievalsInBusiestSecond: number;
  /** Codes of every failed call, by kind (for the messages of failed assertions). */
  codes: Record<string, number>;
}

/**
 * The service refused at most 10 % of each kind, some account requests got through and the
 * excess was held back by the clients (not sent to be refused), retrievals at most 15 a second.
 */
export function expectWithinLimits(load: FleetLoad): void {
  const said = JSON.stringify(load);
  expect(load.accountRequests, said).toBeGreaterThanOrEqual(8);
  expect(load.accountWaitedOut, said).toBeGreaterThan(0);
  expect(load.accountRefused / load.accountRequests, said).toBeLessThanOrEqual(0.1);
  expect(load.retrievalRequests, said).toBeGreaterThanOrEqual(100);
  expect(load.retrievalsInBusiestSecond, said).toBeLessThanOrEqual(15);
  expect(load.retrievalRefused / load.retrievalRequests, said).toBeLessThanOrEqual(0.1);
}

/** `stores(i)`: the store of instance i (one shared store, or one each to see the fleet fail). */
export async function offerThreeTimesTheLimits(
  stores: (instance: number) => Store,
  seconds: number,
): Promise<FleetLoad> {
  const emulator = await startEmulator();
  const sent: Array<{ kind: 'account' | 'retrieval'; at: number; status?: number }> = [];
  const codes: Record<string, number> = {};
  const failed = (kind: string) => (error: { code?: string }) => {
    const name = `${kind} ${error.code ?? 'other'}`;
    codes[name] = (codes[name] ?? 0) + 1;
  };
  const recording: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const kind =
      url.origin === emulator.retrievalUrl ? 'retrieval' : url.pathname === '/api/v1/accounts' ? 'account' : undefined;
    const record = kind && ({ kind, at: performance.now() } as (typeof sent)[number]);
    if (record) sent.push(record);
    const response = await fetch(input, init);
    if (record) record.status = response.status;
    return response;
  };
  const clients = Array.from({ length: 4 }, (_, i) =>
    createDeviceRiskClient({
      tokenSource: createTokenSource({
        clientId: emulator.clientId,
        clientSecret: emulator.clientSecret,
        tokenUrl: emulator.tokenUrl,
        userAgent: UA,
        store: stores(i),
      }),
      ...emulator.serviceUrls,
      userAgent: UA,
      fetch: recording,
      // Short limits: a create or a read that finds no slot soon is refused by the client.
      accountTimeoutMs: 3000,
      timeoutMs: 1000,
    }),
  );
  const transactions: DeviceRiskTransaction[] = [];
  const work: Array<Promise<unknown>> = [];
  const started = performance.now();
  let tick = 0;
  // Every 333 ms a create (3 a second, the limit 1), every 22 ms a status read (45 a second, the limit 15).
  while (performance.now() - started < seconds * 1000) {
    const client = clients[tick % 4]!;
    if (tick % 15 === 0)
      work.push(
        client
          .createAccount({ customerInternalReference: `order-${tick}`, workflowDefinition: { key: 10011 } })
          .then((tx) => void transactions.push(tx), failed('account')),
      );
    const tx = transactions[tick % Math.max(1, transactions.length)];
    if (tx) work.push(client.status(tx).catch(failed('retrieval')));
    tick++;
    await new Promise((resolve) => setTimeout(resolve, 22));
  }
  await Promise.all(work);
  await emulator.close();
  const accounts = sent.filter((r) => r.kind === 'account');
  const retrievals = sent.filter((r) => r.kind === 'retrieval');
  let busiest = 0;
  for (const first of retrievals)
    busiest = Math.max(busiest, retrievals.filter((r) => r.at >= first.at && r.at < first.at + 1000).length);
  return {
    accountRequests: accounts.length,
    accountRefused: accounts.filter((r) => r.status === 429).length,
    accountWaitedOut: codes['account rate_limited'] ?? 0,
    retrievalWaitedOut: codes['retrieval rate_limited'] ?? 0,
    retrievalRequests: retrievals.length,
    retrievalRefused: retrievals.filter((r) => r.status === 429).length,
    retrievalsInBusiestSecond: busiest,
    codes,
  };
}
