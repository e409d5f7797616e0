// The kit's error predicates (src/server/errors.ts): which failures pass (a store away or full,
// answered 503 with a Retry-After) and which do not.
import { describe, expect, it } from 'vitest';
import { DeviceRiskError, ERROR_CODES, isStoreAway } from '../../src/server/errors.js';

describe('isStoreAway', () => {
  it.each([ERROR_CODES.STORE_UNAVAILABLE, ERROR_CODES.STORE_FULL])('%s: the store away for a while', (code) => {
    expect(isStoreAway(new DeviceRiskError(code, 'away'))).toBe(true);
  });

  it.each([ERROR_CODES.INVALID_CONFIGURATION, ERROR_CODES.QUEUE_FULL, ERROR_CODES.NETWORK])(
    '%s: not the store away (a configuration to fix, or another part)',
    (code) => {
      expect(isStoreAway(new DeviceRiskError(code, 'other'))).toBe(false);
    },
  );

  it('an error that only looks like one by its code is none', () => {
    expect(isStoreAway(Object.assign(new Error('x'), { code: ERROR_CODES.STORE_FULL }))).toBe(false);
    expect(isStoreAway({ code: ERROR_CODES.STORE_UNAVAILABLE })).toBe(false);
    expect(isStoreAway(undefined)).toBe(false);
  });
});
