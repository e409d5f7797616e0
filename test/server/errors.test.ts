// The kit's error predicates (src/server/errors.ts): which failures pass (a store away or full,
// answered 503 with a Retry-After) and which do not; and safeOnError, through which every
// integrator's onError of the kit is called.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeviceRiskError, ERROR_CODES, isStoreAway, safeOnError } from '../../src/server/errors.js';

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

describe('safeOnError', () => {
  afterEach(() => void vi.restoreAllMocks());

  it('passes what the hook returns on, and logs a rejection of it (handled: no unhandled rejection)', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    expect(safeOnError(() => 7)('e')).toBe(7);
    const rejected = safeOnError(() => Promise.reject(new Error('sink down')))('e') as Promise<unknown>;
    await expect(rejected).rejects.toThrow('sink down');
    expect(logged.mock.calls.map(([line]) => String(line))).toEqual([expect.stringContaining('sink down')]);
  });

  it('turns a throw into a logged, handled rejection for a caller that waits for it', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const returned = safeOnError(() => {
      throw new Error('logger broke');
    })('e') as Promise<unknown>;
    await expect(returned).rejects.toThrow('logger broke');
    expect(logged).toHaveBeenCalledTimes(1);
  });

  it("is how every part of the kit calls an integrator's onError (none calls it bare)", () => {
    const root = new URL('../../src/server/', import.meta.url).pathname;
    const bare = (readdirSync(root, { recursive: true }) as string[])
      .filter((file) => file.endsWith('.ts'))
      .filter((file) => /options\.onError \?\?/.test(readFileSync(join(root, file), 'utf8')));
    expect(bare).toEqual([]);
  });
});
