// The browser's answer to a failed check (src/server/endpoint/failure-answer.ts): a 4xx without
// Retry-After for what no retry can mend, a 502/503 with Retry-After for what time may mend.
import { describe, expect, it } from 'vitest';
import { failureAnswer, isPermanent, isUnavailable } from '../../../src/server/endpoint/failure-answer.js';
import { DeviceRiskError } from '../../../src/server/errors.js';

const failure = (code: string, options: { status?: number; retryAfter?: number } = {}) =>
  new DeviceRiskError(code as never, 'words', options);

describe('isPermanent', () => {
  it.each([
    ['invalid_configuration', undefined, true],
    ['forged_address', undefined, true],
    ['invalid_account_request', undefined, true],
    ['request_rejected', 400, true],
    ['request_rejected', 499, true],
    ['request_rejected', 429, false],
    ['request_rejected', 399, false],
    ['request_rejected', 500, false],
    ['request_rejected', undefined, false],
    ['upstream_error', 400, false],
    ['network_error', undefined, false],
  ])('%s with status %s: %s', (code, status, permanent) => {
    expect(isPermanent(failure(code, status === undefined ? {} : { status }))).toBe(permanent);
  });

  it('an error that is not the kit’s is not permanent', () => {
    expect(isPermanent(Object.assign(new Error('x'), { code: 'invalid_configuration' }))).toBe(false);
  });
});

describe('isUnavailable', () => {
  it.each([
    ['upstream_error', 429, true],
    ['upstream_error', 503, true],
    ['upstream_error', 502, false],
    ['upstream_error', 500, false],
    ['network_error', undefined, true],
    ['rate_limited', undefined, true],
    ['store_unavailable', undefined, true],
    ['store_full', undefined, true],
    ['queue_full', undefined, true],
    ['request_rejected', 400, false],
  ])('%s with status %s: %s', (code, status, unavailable) => {
    expect(isUnavailable(failure(code, status === undefined ? {} : { status }))).toBe(unavailable);
  });

  it('an error that is not the kit’s is not unavailable', () => {
    expect(isUnavailable(Object.assign(new Error('x'), { code: 'network_error' }))).toBe(false);
  });
});

describe('failureAnswer', () => {
  const answer = async (error: unknown) => {
    const response = failureAnswer(error);
    const body = (await response.json()) as { error: { code: string } };
    return { status: response.status, code: body.error.code, retryAfter: response.headers.get('retry-after') };
  };

  it.each([
    ['invalid_configuration', {}, { status: 500, code: 'invalid_configuration', retryAfter: null }],
    ['forged_address', {}, { status: 500, code: 'forged_address', retryAfter: null }],
    ['invalid_account_request', {}, { status: 422, code: 'invalid_account_request', retryAfter: null }],
    ['request_rejected', { status: 404 }, { status: 404, code: 'request_rejected', retryAfter: null }],
    ['request_rejected', { status: 400 }, { status: 400, code: 'request_rejected', retryAfter: null }],
    ['request_rejected', { status: 499 }, { status: 499, code: 'request_rejected', retryAfter: null }],
    ['request_rejected', { status: 429 }, { status: 503, code: 'request_rejected', retryAfter: '2' }],
    ['request_rejected', { status: 302 }, { status: 502, code: 'request_rejected', retryAfter: '2' }],
    ['request_rejected', {}, { status: 502, code: 'request_rejected', retryAfter: '2' }],
    ['upstream_error', { status: 500 }, { status: 502, code: 'upstream_error', retryAfter: '2' }],
    ['upstream_error', { status: 503, retryAfter: 7 }, { status: 503, code: 'upstream_error', retryAfter: '7' }],
    ['rate_limited', { status: 429, retryAfter: 90 }, { status: 503, code: 'rate_limited', retryAfter: '60' }],
    ['network_error', { retryAfter: 0 }, { status: 503, code: 'network_error', retryAfter: '0' }],
    ['idempotency_key_in_use', { retryAfter: 30 }, { status: 409, code: 'idempotency_key_in_use', retryAfter: '1' }],
    ['store_unavailable', { retryAfter: 1 }, { status: 503, code: 'store_unavailable', retryAfter: '1' }],
    ['store_full', { retryAfter: 5 }, { status: 503, code: 'store_full', retryAfter: '5' }],
    ['queue_full', { status: 503, retryAfter: 5 }, { status: 503, code: 'queue_full', retryAfter: '5' }],
    ['queue_full', { retryAfter: 5 }, { status: 503, code: 'queue_full', retryAfter: '5' }],
  ])('%s %j: %j', async (code, options, expected) => {
    expect(await answer(failure(code, options))).toEqual(expected);
  });

  it('an error that is not the kit’s is a 502 internal_error, with Retry-After', async () => {
    expect(await answer(new Error('boom'))).toEqual({ status: 502, code: 'internal_error', retryAfter: '2' });
  });

  it('each answer names what failed: the service only for its own failures', async () => {
    const message = async (error: unknown) =>
      ((await failureAnswer(error).json()) as { error: { message: string } }).error.message;
    expect(await message(failure('upstream_error', { status: 500 }))).toMatch(
      /device-risk service could not be reached/,
    );
    expect(await message(failure('network_error'))).toMatch(/device-risk service could not be reached/);
    expect(await message(failure('store_unavailable'))).toMatch(/shared store could not be reached/);
    expect(await message(failure('store_full'))).toMatch(/shared store is full/);
    expect(await message(failure('queue_full'))).toMatch(/Too many checkouts wait/);
    expect(await message(new Error('boom'))).toMatch(/failed on this server/);
    // A Redis at maxmemory whose reply was let through as it is: the store, full.
    const oom = Object.assign(new Error("OOM command not allowed when used memory > 'maxmemory'."), {
      name: 'ReplyError',
    });
    expect(await answer(oom)).toEqual({ status: 503, code: 'store_full', retryAfter: '5' });
    expect(await message(oom)).toMatch(/shared store is full/);
  });
});
