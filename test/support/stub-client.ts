// A Device Risk client on no network, for the endpoint's tests: numbered transactions, every
// call recorded, decisions by execution (wf-2 is REJECTED).
import { DeviceRiskTransaction } from '../../src/server/api/device-risk-client.js';
import { DeviceRiskError } from '../../src/server/errors.js';
import type { DeviceRiskClient } from '../../src/server/index.js';

/** The `n`-th transaction of a client on no network: acc-n, wf-n, its token tx-token-n. */
export const stubTransaction = (n: number): DeviceRiskTransaction =>
  new DeviceRiskTransaction({
    accountId: `acc-${n}`,
    workflowExecutionId: `wf-${n}`,
    credentialId: 'cred',
    uploadUrl: 'https://api.example/upload',
    finalizeUrl: 'https://api.example/finalize',
    tokenExpiresAt: Date.now() + 600_000,
    token: `tx-token-${n}`,
  });

/** The service's 429 to an account create, as the client throws it (retry after 1 s). */
export const accountCreateLimited = (): DeviceRiskError =>
  new DeviceRiskError('rate_limited', 'account create answered 429', {
    status: 429,
    retryAfter: 1,
    operation: 'account create',
  });

/** A client's sealing of transactions without a key: what it seals, it opens, the token with it. */
export const plainSealing = {
  sealTransaction: async (tx: DeviceRiskTransaction) => JSON.stringify({ ...tx.toJSON(), token: tx.token }),
  openTransaction: async (sealed: string) => new DeviceRiskTransaction(JSON.parse(sealed) as never),
};

export function stubClient(overrides: Partial<DeviceRiskClient> = {}): {
  client: DeviceRiskClient;
  creates: () => number;
  calls: string[];
} {
  let n = 0;
  const calls: string[] = [];
  const transaction = () =>
    new DeviceRiskTransaction({
      accountId: `acc-${++n}`,
      workflowExecutionId: `wf-${n}`,
      credentialId: 'cred',
      uploadUrl: 'https://api.example/u',
      finalizeUrl: 'https://api.example/f',
      tokenExpiresAt: Date.now() + 600_000,
      token: 'tx',
    });
  const client = {
    retrievalOrigin: 'https://retrieval.example',
    clientId: 'client-1',
    accountTimeoutMs: 1000,
    createAccount: async () => {
      calls.push('create');
      return transaction();
    },
    uploadBlackbox: async (tx: DeviceRiskTransaction) => void calls.push(`upload ${tx.workflowExecutionId}`),
    finalize: async (tx: DeviceRiskTransaction) => void calls.push(`finalize ${tx.workflowExecutionId}`),
    status: async () => 'PROCESSED',
    details: async (tx: DeviceRiskTransaction) => ({
      workflowExecutionId: tx.workflowExecutionId,
      decision: tx.workflowExecutionId === 'wf-2' ? 'REJECTED' : 'PASSED',
    }),
    ...plainSealing,
    ...overrides,
  } as unknown as DeviceRiskClient;
  return { client, creates: () => n, calls };
}

/**
 * A Device Risk client on no network whose calls name the order and the execution
 * (`create <order>`, `upload wf-n`, `finalize wf-n`), with `hold()`: every account create
 * waits until the function it returns is called.
 */
export function orderedClient(): { client: DeviceRiskClient; calls: string[]; hold(): () => void } {
  const calls: string[] = [];
  let n = 0;
  let gate: Promise<void> | undefined;
  const client = {
    retrievalOrigin: 'https://retrieval.example',
    clientId: 'client-1',
    accountTimeoutMs: 1000,
    createAccount: async (body: { customerInternalReference: string }) => {
      await gate;
      calls.push(`create ${body.customerInternalReference}`);
      return stubTransaction(++n);
    },
    uploadBlackbox: async (tx: DeviceRiskTransaction) => void calls.push(`upload ${tx.workflowExecutionId}`),
    finalize: async (tx: DeviceRiskTransaction) => void calls.push(`finalize ${tx.workflowExecutionId}`),
    status: async () => 'PROCESSED',
    details: async (tx: DeviceRiskTransaction) => ({ workflowExecutionId: tx.workflowExecutionId }),
    ...plainSealing,
  } as unknown as DeviceRiskClient;
  return {
    client,
    calls,
    hold() {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}
