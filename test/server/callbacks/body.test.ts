// The callback's documented shape, alone: what passes, and each way it is refused.
import { describe, expect, it } from 'vitest';
import { checkCallback } from '../../../src/server/callbacks/body.js';
import { ACCOUNT, EXECUTION, RETRIEVAL, callbackBody } from '../../support/callbacks.js';

const refusal = (body: unknown) => {
  try {
    checkCallback(body, RETRIEVAL);
  } catch (error) {
    return error as { code: string; message: string };
  }
  return undefined;
};

describe('checkCallback', () => {
  it('gives the body back as it came when it has the documented shape', () => {
    const body = callbackBody();
    expect(checkCallback(body, RETRIEVAL)).toBe(body);
    expect(checkCallback(callbackBody({ definitionKey: 'key', status: 'TOKEN_EXPIRED' }), RETRIEVAL)).toBeTruthy();
    // Intermediate statuses are of the same form: accepted here, ignored by the receiver.
    for (const status of ['ACQUIRED', 'INITIATED', 'A'.repeat(64), 'NEW_STATUS_2'])
      expect(checkCallback(callbackBody({ status }), RETRIEVAL)).toBeTruthy();
  });

  it.each([
    ['no object', 7, 'is not a JSON object'],
    [
      'an execution href with a query',
      callbackBody({ href: `${callbackBody().workflowExecution.href}?x=1` }),
      'href off',
    ],
    [
      'an execution href with credentials',
      callbackBody({ href: callbackBody().workflowExecution.href.replace('https://', 'https://u@') }),
      'href off',
    ],
    ['a status in lower case', callbackBody({ status: 'processed' }), "service's form"],
    ['a status that is a number', callbackBody({ status: 3 }), "service's form"],
    ['no status', callbackBody({ status: undefined }), "service's form"],
    ['a status with a space', callbackBody({ status: 'PROCESSED ' }), "service's form"],
    ['a status of 65 characters', callbackBody({ status: 'A'.repeat(65) }), "service's form"],
    ['no definition key', callbackBody({ definitionKey: null }), 'definitionKey'],
    ['a callbackSentAt that is a number', { ...callbackBody(), callbackSentAt: 123 }, 'lacks a callbackSentAt date'],
    ['no workflowExecution', { ...callbackBody(), workflowExecution: undefined }, 'lacks a workflowExecution.id UUID'],
    ['an execution id after a prefix', callbackBody({ id: `x${EXECUTION}` }), 'lacks a workflowExecution.id UUID'],
    ['an execution id with a tail', callbackBody({ id: `${EXECUTION}0` }), 'lacks a workflowExecution.id UUID'],
    ['no account', { ...callbackBody(), account: undefined }, 'lacks an account.id UUID'],
    // An array of one UUID reads as that UUID wherever it is made a string: only its type tells.
    ['an execution id in an array', callbackBody({ id: [EXECUTION] }), 'lacks a workflowExecution.id UUID'],
    [
      'an account id in an array',
      { ...callbackBody(), account: { ...callbackBody().account, id: [ACCOUNT] } },
      'lacks an account.id UUID',
    ],
    [
      'an account id after a prefix',
      { ...callbackBody(), account: { ...callbackBody().account, id: `x${ACCOUNT}` } },
      'lacks an account.id UUID',
    ],
    ['an execution href that is a number', callbackBody({ href: 5 }), 'workflowExecution.href off'],
  ])('%s is invalid_callback, saying what', (_, body, words) => {
    const error = refusal(body);
    expect(error).toMatchObject({ code: 'invalid_callback' });
    expect(error!.message).toContain(words);
  });

  it('holds the account href to the account of the body, on the retrieval origin', () => {
    const other = { ...callbackBody(), account: { id: ACCOUNT, href: `${RETRIEVAL}/api/v1/accounts/${EXECUTION}` } };
    expect(refusal(other)?.message).toContain('account.href off https://retrieval.test');
    expect(refusal(callbackBody())).toBeUndefined();
  });
});
