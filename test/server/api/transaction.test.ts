// One transaction's Device Risk credential (src/server/api/transaction.ts): what an account
// answer must hold, the addresses of the documented shapes only (docs/vendor-contract.md#the-service),
// and a transaction token that never shows in JSON.
import { describe, expect, it } from 'vitest';
import { createTransactions, DeviceRiskTransaction } from '../../../src/server/api/transaction.js';
import { ACCOUNT, BASE, CREDENTIAL, EXECUTION, EXECUTION_URL, PART_URL, T0 } from '../../support/api-shapes.js';

const transactions = () => createTransactions(new URL(BASE), () => T0, 30_000);
const answer = (api: Record<string, unknown> = {}) => ({
  workflowExecution: {
    credentials: [
      {
        id: CREDENTIAL,
        category: 'DATA',
        allowedChannels: ['API'],
        api: { token: 'tx-token', parts: { device_risk: PART_URL }, workflowExecution: EXECUTION_URL, ...api },
      },
    ],
  },
});
const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('not refused');
};

describe('an account answer', () => {
  it('makes a transaction whose JSON has every field but the token', () => {
    const made = transactions().transactionFrom(answer(), 60_000, T0);
    expect(JSON.parse(JSON.stringify(made))).toEqual({
      accountId: ACCOUNT,
      workflowExecutionId: EXECUTION,
      credentialId: CREDENTIAL,
      part: 'device_risk',
      uploadUrl: PART_URL,
      finalizeUrl: EXECUTION_URL,
      tokenExpiresAt: T0 + 60_000,
    });
    expect(made.token).toBe('tx-token');
  });

  it('that is null, or no object, is invalid_response, not a TypeError', () => {
    for (const value of [null, undefined, 'text'])
      expect(refusal(() => transactions().transactionFrom(value))).toMatchObject({ code: 'invalid_response' });
  });

  it.each([
    ['no token', { token: undefined }],
    ['an empty token', { token: '' }],
    ['a token that is no string', { token: 42 }],
  ])('with %s is invalid_response', (_, api) => {
    expect(refusal(() => transactions().transactionFrom(answer(api)))).toMatchObject({ code: 'invalid_response' });
  });

  it.each([
    [
      'an upload address of the right shape on another origin',
      { parts: { device_risk: PART_URL.replace(BASE, 'https://evil.example') } },
    ],
    ['an upload address of another shape on the API', { parts: { device_risk: `${EXECUTION_URL}/upload` } }],
    ['a finalize address of another shape on the API', { workflowExecution: `${BASE}/api/v1/accounts/${ACCOUNT}` }],
    [
      'a finalize address that is no string, whatever its text',
      { workflowExecution: { toString: (): string => EXECUTION_URL } },
    ],
  ])('with %s is forged_address', (_, api) => {
    expect(refusal(() => transactions().transactionFrom(answer(api)))).toMatchObject({ code: 'forged_address' });
  });

  it('a refused address is named by where it came from, so that the integrator can find it', () => {
    const upload = refusal(() =>
      transactions().transactionFrom(answer({ parts: { device_risk: 'https://evil.example/x' } })),
    );
    expect(upload.message).toContain('api.parts.device_risk');
    const finalize = refusal(() => transactions().transactionFrom(answer({ workflowExecution: 'not a url' })));
    expect(finalize.message).toContain('api.workflowExecution');
  });
});

describe('a transaction before its use', () => {
  const rebuilt = (changes: Partial<Record<'uploadUrl' | 'finalizeUrl', string>>) =>
    new DeviceRiskTransaction({ ...transactions().transactionFrom(answer()).toJSON(), token: 't', ...changes });

  it('whose addresses were changed to another shape on the API is refused, naming which', () => {
    const upload = refusal(() => transactions().usable(rebuilt({ uploadUrl: `${EXECUTION_URL}/x` }), 'upload'));
    expect(upload).toMatchObject({ code: 'forged_address' });
    expect(upload.message).toContain('upload address');
    const finalize = refusal(() => transactions().usable(rebuilt({ finalizeUrl: `${BASE}/api/v1` }), 'finalize'));
    expect(finalize).toMatchObject({ code: 'forged_address' });
    expect(finalize.message).toContain('finalize address');
  });

  it('as it was made is usable', () => {
    expect(() => transactions().usable(rebuilt({}), 'upload')).not.toThrow();
  });
});
