// A Device Risk client on no network, for the endpoint's tests: numbered transactions, every
// call recorded, decisions by execution (wf-2 is REJECTED).
import { DeviceRiskTransaction } from '../../src/server/api/device-risk-client.js';
import type { DeviceRiskClient } from '../../src/server/index.js';

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
    sealTransaction: async (tx: DeviceRiskTransaction) => JSON.stringify({ ...tx.toJSON(), token: tx.token }),
    openTransaction: async (sealed: string) => new DeviceRiskTransaction(JSON.parse(sealed) as never),
    ...overrides,
  } as unknown as DeviceRiskClient;
  return { client, creates: () => n, calls };
}
