// The blackbox check before an upload (src/server/api/upload.ts): only a non-empty string of
// the blackbox alphabet, however its text reads.
import { describe, expect, it } from 'vitest';
import type { Call, CallInit } from '../../../src/server/api/call.js';
import { createTransactions } from '../../../src/server/api/transaction.js';
import { checkBlackbox, createUpload } from '../../../src/server/api/upload.js';
import { transactionAt } from '../../support/api-shapes.js';

describe('checkBlackbox', () => {
  it.each([
    ['a number whose digits are in the alphabet', 12345],
    ['an object whose text is a blackbox', { toString: () => 'AAAA' }],
    ['a character outside the alphabet', 'AAAA<AAAA'],
    ['one outside the alphabet before it', '<AAAA'],
    ['one outside the alphabet after it', 'AAAA<'],
  ])('refuses %s: invalid_blackbox', (_, value) => {
    expect(() => checkBlackbox(value)).toThrow(expect.objectContaining({ code: 'invalid_blackbox' }));
  });

  it('returns a blackbox as it is', () => {
    expect(checkBlackbox('AB+/@cd==')).toBe('AB+/@cd==');
  });
});

describe('uploadBlackbox', () => {
  it('POSTs { sessionId } to the upload address with the transaction token, retried on failure', async () => {
    const transaction = transactionAt(Date.now());
    const calls: Array<{ operation: string; url: string; init: CallInit; repeatable: boolean }> = [];
    const call: Call = async (operation, url, init, repeatable) => {
      calls.push({ operation, url, init, repeatable });
      return new Response(null, { status: 204 });
    };
    const transactions = createTransactions(new URL('https://api.example'), Date.now, 30_000);
    await createUpload(call, transactions)(transaction, 'AAAA');
    expect(calls).toMatchObject([
      {
        operation: 'upload',
        url: transaction.uploadUrl,
        init: { method: 'POST', body: '{"sessionId":"AAAA"}' },
        repeatable: true,
      },
    ]);
    expect(await calls[0]!.init.bearer()).toBe('tx-token');
  });
});
