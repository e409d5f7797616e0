// The callback handler's options, alone: their defaults, and each wrong one refused when the
// handler is made.
import { describe, expect, it } from 'vitest';
import { CALLBACK_OPTIONS, callbackSettings } from '../../../src/server/callbacks/settings.js';
import type { CallbackHandlerOptions } from '../../../src/server/callbacks/types.js';
import { settingsFor, stubClient } from '../../support/callbacks.js';

const request = new Request('https://shop.test/callbacks', { method: 'POST' });

describe('callbackSettings', () => {
  it('fills the documented defaults and keys the store by client id', () => {
    expect(settingsFor()).toMatchObject({
      namespace: 'client-1:callback',
      recordTtlMs: 7 * 86_400_000,
      retryDelayMs: 1000,
      maxRetryDelayMs: 60_000,
      maxBodyBytes: 16 * 1024,
      leaseMs: 60_000,
      retryForMs: 86_400_000,
      sweepIntervalMs: 30_000,
      onResultTimeoutMs: 30_000,
    });
  });

  it.each<[string, Partial<CallbackHandlerOptions>, string]>([
    ['no onResult', { onResult: undefined }, 'onResult is required'],
    ['no allowedSources', { allowedSources: undefined }, 'allowedSources is required'],
    ['an entry that is no address', { allowedSources: ['10.0.0.0/'] }, '"10.0.0.0/" is not an address'],
    ['onResultTimeoutMs 0', { onResultTimeoutMs: 0 }, 'onResultTimeoutMs must be a positive'],
    ['a retryForMs as long as the records', { retryForMs: 1000, recordTtlMs: 1000 }, 'retryForMs must be'],
    ['retryForMs 0', { retryForMs: 0 }, 'retryForMs must be'],
    ['sweepIntervalMs NaN', { sweepIntervalMs: Number.NaN }, 'sweepIntervalMs must be a positive'],
    ['an untagged allowance of 0', { untaggedCallbacks: { burst: 0, perMinute: 1 } }, 'untaggedCallbacks'],
  ])('%s is invalid_configuration', (_, options, words) => {
    const make = () =>
      callbackSettings({ client: stubClient(), allowedSources: 'any', onResult: () => {}, ...options });
    expect(make).toThrow(expect.objectContaining({ code: 'invalid_configuration' }) as Error);
    expect(make).toThrow(words);
  });

  it('lets in the listed addresses only, from the context; a function or any as given', () => {
    const listed = settingsFor({ allowedSources: ['192.0.2.0/24'] }).allowed;
    expect(listed(request, { clientAddress: '192.0.2.9' })).toBe(true);
    expect(listed(request, { clientAddress: '198.51.100.1' })).toBe(false);
    expect(listed(request)).toBe(false);
    expect(settingsFor({ allowedSources: 'any' }).allowed(request)).toBe(true);
    expect(settingsFor({ allowedSources: () => false }).allowed(request)).toBe(false);
  });

  it('allows untaggedCallbacks burst at once, then waits', () => {
    const { untagged } = settingsFor({ untaggedCallbacks: { burst: 2, perMinute: 60 }, now: () => 0 });
    expect([untagged.take('untagged'), untagged.take('untagged')]).toEqual([0, 0]);
    expect(untagged.take('untagged')).toBeGreaterThan(0);
  });
});

describe('CALLBACK_OPTIONS', () => {
  it.each<[keyof CallbackHandlerOptions, unknown]>([
    ['client', 'client'],
    ['store', 'redis'],
    ['storeTimeoutMs', '3s'],
    ['leaseMs', -1],
    ['onError', 1],
    ['retryDelayMs', '1s'],
    ['maxRetryDelayMs', 0],
    ['recordTtlMs', '7 days'],
    ['maxBodyBytes', 0.5],
    ['now', 0],
  ])('a bad %s is refused when the handler is made, naming it', (name, value) => {
    const make = () =>
      callbackSettings({ client: stubClient(), allowedSources: 'any', onResult: () => {}, [name]: value });
    expect(make).toThrow(expect.objectContaining({ code: 'invalid_configuration' }) as Error);
    expect(make).toThrow(`${name} must be`);
  });

  it('has the defaults callbackSettings fills', () => {
    const filled = settingsFor() as unknown as Record<string, unknown>;
    for (const [name, row] of Object.entries(CALLBACK_OPTIONS))
      if (typeof row.default === 'number' && name in filled) expect([name, filled[name]]).toEqual([name, row.default]);
  });
});
