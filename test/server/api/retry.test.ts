// The retry policy of every call to the service (api/retry.ts): backoff, Retry-After, and
// the summary of an error answer that messages carry.
import { describe, expect, it, vi } from 'vitest';
import { backoffMs, retryAfterSeconds, upstreamSummary } from '../../../src/server/api/retry.js';

const withRetryAfter = (value: string) => new Response(null, { status: 429, headers: { 'retry-after': value } });

describe('backoffMs', () => {
  it('waits what Retry-After says, at most the cap; else full jitter below 250 ms × 2^attempt', () => {
    expect(backoffMs(3, 7, 30)).toBe(7000);
    expect(backoffMs(3, 90, 30)).toBe(30_000);
    vi.spyOn(Math, 'random').mockReturnValue(0.999);
    expect(backoffMs(2)).toBeCloseTo(999, 0);
    vi.spyOn(Math, 'random').mockReturnValue(0);
    expect(backoffMs(2)).toBe(0);
    vi.restoreAllMocks();
  });
});

describe('retryAfterSeconds', () => {
  const now = () => Date.parse('2026-11-24T08:00:00Z');
  it.each([
    ['12', 12],
    [' 12 ', 12],
    ['0', 0],
    ['Tue, 24 Nov 2026 08:00:30 GMT', 30],
    ['Tue, 24 Nov 2026 07:59:00 GMT', 0],
  ])('%j is %s seconds', (header, seconds) => {
    expect(retryAfterSeconds(withRetryAfter(header), now)).toBe(seconds);
  });

  it.each(['12abc', 'abc12', 'soon'])('%j is no answer', (header) => {
    expect(retryAfterSeconds(withRetryAfter(header), now)).toBeUndefined();
  });

  it('no header is no answer', () => {
    expect(retryAfterSeconds(new Response(null, { status: 503 }), now)).toBeUndefined();
  });
});

describe('upstreamSummary', () => {
  const answer = (body: unknown) => new Response(JSON.stringify(body), { status: 400 });

  it('the OAuth error, problem title and detail, in that order', async () => {
    expect(await upstreamSummary(answer({ detail: 'd', title: 't', error: 'invalid_client' }))).toBe(
      ' (invalid_client: t: d)',
    );
  });

  it('leaves out what is not a short string', async () => {
    expect(await upstreamSummary(answer({ error: 42, title: 'x'.repeat(200), detail: 'short' }))).toBe(' (short)');
    expect(await upstreamSummary(answer({ title: 'x'.repeat(199) }))).toBe(` (${'x'.repeat(199)})`);
  });

  it('nothing for a body without them, or not JSON; the answer stays readable', async () => {
    expect(await upstreamSummary(answer({ other: 'x' }))).toBe('');
    const html = new Response('<html>busy</html>', { status: 503 });
    expect(await upstreamSummary(html)).toBe('');
    expect(await html.text()).toBe('<html>busy</html>');
  });
});
