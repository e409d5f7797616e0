// The checks every operation of the emulated service shares (src/emulator/service/state.ts): a
// transaction's status (docs/vendor-contract.md#the-answer) and the access token.
import { describe, expect, it } from 'vitest';
import { slidingWindow } from '../../../src/emulator/service/state.js';
import { setup } from '../../support/emulated-service.js';

describe('statusOf', () => {
  it('a token that lapses as the session ends: TOKEN_EXPIRED', async () => {
    const { transaction, advance, service } = setup({ sessionTimeoutMs: 15 * 60_000 });
    await transaction({ customerInternalReference: 'o', workflowDefinition: { key: 1 }, tokenLifetime: '15m' });
    advance(15 * 60_000 - 1);
    expect(service.statusOf(service.transactions()[0]!)).toBe('INITIATED');
    advance(1);
    expect(service.statusOf(service.transactions()[0]!)).toBe('TOKEN_EXPIRED');
  });
});

describe('the access token', () => {
  it('works until its lifetime has passed, then is 401 saying so', async () => {
    const { transaction, call, advance } = setup({ accessTokenLifetimeSeconds: 60 });
    const tx = await transaction();
    const status = `/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.executionId}/status`;
    advance(59_999);
    expect((await call('GET', status)).status).toBe(200);
    advance(1);
    const expired = await call('GET', status);
    expect([expired.status, await expired.json()]).toEqual([
      401,
      { title: 'Unauthorized', status: 401, detail: 'The access token has expired' },
    ]);
  });
});

describe('slidingWindow', () => {
  it('at most perSecond in any second; room again as each one is a second old', () => {
    let now = 0;
    const window = slidingWindow(2, () => now);
    expect(window.take()).toBe(true);
    now = 500;
    expect([window.take(), window.take()]).toEqual([true, false]);
    now = 999;
    expect(window.take()).toBe(false);
    now = 1000;
    expect([window.take(), window.take()]).toEqual([true, false]);
    now = 1500;
    expect(window.take()).toBe(true);
    expect(slidingWindow(0, () => now).take()).toBe(true);
  });
});
