// Whose execution a callback is for: one read with the shop's own token places it.
import { describe, expect, it } from 'vitest';
import { isUnknownExecution, placeExecution } from '../../../src/server/callbacks/provenance.js';
import { DeviceRiskError } from '../../../src/server/errors.js';

const IDS = { accountId: 'a', workflowExecutionId: 'w' };

function client() {
  const reads: string[] = [];
  return {
    reads,
    details: async () => {
      reads.push('details');
      return { status: 'PROCESSED', decision: 'PASSED' } as never;
    },
    status: async () => {
      reads.push('status');
      return 'TOKEN_EXPIRED';
    },
  };
}

describe('placeExecution', () => {
  it('PROCESSED: the details, one read, tagged or not', async () => {
    for (const tagged of [true, false, undefined]) {
      const c = client();
      expect(await placeExecution(c, IDS, 'PROCESSED', tagged)).toEqual({ status: 'PROCESSED', decision: 'PASSED' });
      expect(c.reads).toEqual(['details']);
    }
  });

  it('PROCESSED, its details not yet (read before the service wrote them): result_not_ready, never a decision', async () => {
    const early = { ...client(), details: async () => ({ status: 'ACQUIRED', decision: 'NOT_EXECUTED' }) as never };
    await expect(placeExecution(early, IDS, 'PROCESSED', true)).rejects.toMatchObject({
      code: 'result_not_ready',
      operation: 'details',
      retryAfter: 1,
      message: expect.stringContaining('w is PROCESSED, its details still say ACQUIRED'),
    });
  });

  it('an expiry: one status read unless tagged, and no details', async () => {
    for (const status of ['TOKEN_EXPIRED', 'SESSION_EXPIRED'] as const) {
      const untagged = client();
      expect(await placeExecution(untagged, IDS, status, false)).toBeUndefined();
      expect(untagged.reads).toEqual(['status']);
      const tagged = client();
      expect(await placeExecution(tagged, IDS, status, true)).toBeUndefined();
      expect(tagged.reads).toEqual([]);
    }
  });
});

describe('isUnknownExecution', () => {
  const rejected = (status: number | undefined, operation: string) =>
    new DeviceRiskError('request_rejected', 'x', { ...(status === undefined ? {} : { status }), operation });

  it('a 404 or 410 of the details or status read', () => {
    for (const operation of ['details', 'status'])
      for (const status of [404, 410]) expect(isUnknownExecution(rejected(status, operation))).toBe(true);
  });

  it('not another status, another operation, or another error', () => {
    for (const error of [
      rejected(400, 'details'),
      rejected(403, 'status'),
      rejected(429, 'details'),
      rejected(500, 'details'),
      rejected(undefined, 'details'),
      rejected(404, 'token'),
      rejected(404, 'account create'),
      Object.assign(new Error('x'), { status: 404, operation: 'details' }),
      undefined,
    ])
      expect(isUnknownExecution(error)).toBe(false);
  });
});
