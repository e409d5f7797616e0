// @vitest-environment happy-dom
// Consent before collection: nothing touches the page until consent is given; a denial, an
// undecided consent and an abort end the call with their code and outcome.
import { beforeEach, describe, expect, it } from 'vitest';
import type { CaptureOutcome } from '../../src/shared/types.js';
import { failure, freshPage, LOADER_URL, scriptsFor, w } from '../support/vendor-dom.js';

let api: Awaited<ReturnType<typeof freshPage>>;
beforeEach(async () => {
  api = await freshPage();
});

const untouched = () => {
  expect(w().IGLOO).toBeUndefined();
  expect(scriptsFor(LOADER_URL)).toEqual([]);
};

describe('consent', () => {
  it('nothing is written or injected before consent; once granted, the capture runs', async () => {
    let grant!: (value: boolean) => void;
    const pending = api.captureBlackbox({ loaderUrl: LOADER_URL, consent: new Promise<boolean>((r) => (grant = r)) });
    await new Promise((r) => setTimeout(r, 50));
    untouched();
    grant(true);
    expect(await pending).toMatch(/^0400/);
    expect(w().IGLOO.loader).toBeDefined();
  });

  it.each([
    ['a function returning true', () => true],
    ['a function returning a promise of true', async () => true],
  ])('%s grants', async (_, consent) => {
    expect(await api.captureBlackbox({ loaderUrl: LOADER_URL, consent })).toMatch(/^0400/);
  });

  it.each([
    ['false', () => false],
    ['a truthy value that is not true', () => 'yes'],
    ['a rejection (the CMP failed)', () => Promise.reject(new Error('cmp down'))],
    [
      'a throwing function',
      () => {
        throw new Error('cmp bug');
      },
    ],
  ])('%s denies: consent_denied, outcome consent_denied, nothing touched', async (_, consent) => {
    const outcomes: CaptureOutcome[] = [];
    const error = await failure(
      api.captureBlackbox({ loaderUrl: LOADER_URL, consent, onOutcome: (o) => void outcomes.push(o) }),
    );
    expect(error.code).toBe('consent_denied');
    expect(error.message).toMatch(/Consent to device collection was not given/);
    expect(outcomes).toEqual([{ outcome: 'consent_denied', scripts: [], durationMs: 0 }]);
    untouched();
  });

  it('an undecided consent counts against timeoutMs: timeout, nothing touched', async () => {
    const outcomes: CaptureOutcome[] = [];
    const started = Date.now();
    const error = await failure(
      api.captureBlackbox({
        loaderUrl: LOADER_URL,
        timeoutMs: 150,
        consent: new Promise(() => {}),
        onOutcome: (o) => void outcomes.push(o),
      }),
    );
    expect(error.code).toBe('timeout');
    expect(error.message).toMatch(/not decided within 150 ms/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(outcomes).toEqual([expect.objectContaining({ outcome: 'timeout-partial' })]);
    untouched();
  });

  it("what is left of timeoutMs after consent is the capture's limit", async () => {
    const slowGrant = new Promise<boolean>((r) => setTimeout(() => r(true), 250));
    // The emulated loader takes about 100 ms: within 300 ms in all, not within the 50 left after consent.
    const error = await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, timeoutMs: 300, consent: slowGrant }));
    expect(error.code).toBe('timeout');
  });

  it('an abort while waiting for consent is aborted, nothing touched', async () => {
    const controller = new AbortController();
    const pending = failure(
      api.captureBlackbox({ loaderUrl: LOADER_URL, consent: new Promise(() => {}), signal: controller.signal }),
    );
    controller.abort(new Error('left'));
    const error = await pending;
    expect(error.code).toBe('aborted');
    expect(error.cause).toEqual(new Error('left'));
    untouched();
  });

  it('a denial is reported to the endpoint as an outcome alone', async () => {
    const bodies: unknown[] = [];
    // The report goes out after the call settles (a lazy chunk): waited for by its arrival, not a sleep.
    let reported!: () => void;
    const arrived = new Promise<void>((resolve) => (reported = resolve));
    const fetch = (async (_: string, init: RequestInit) => {
      bodies.push(JSON.parse(init.body as string));
      reported();
      return new Response('{}', { status: 202 });
    }) as unknown as typeof globalThis.fetch;
    await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, consent: () => false, post: { url: '/risk', fetch } }));
    await arrived;
    expect(bodies).toEqual([{ outcome: { outcome: 'consent_denied', scripts: [], durationMs: 0 } }]);
  });

  it('a consent that is neither a function nor a promise is invalid_option', async () => {
    expect((await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, consent: true as never }))).code).toBe(
      'invalid_option',
    );
    untouched();
  });
});

describe('consent with post: one delivery per page run', () => {
  /** A post whose fetch counts the blackbox deliveries and their Idempotency-Keys. */
  const counted = () => {
    const keys: string[] = [];
    const fetch = (async (_: string, init: RequestInit) => {
      keys.push(new Headers(init.headers).get('idempotency-key')!);
      return new Response('{}', { status: 200 });
    }) as unknown as typeof globalThis.fetch;
    return { keys, post: { url: '/risk', fetch } };
  };

  it('calls granted at different moments, each with its own consent function, post once', async () => {
    const { keys, post } = counted();
    const first = api.captureBlackbox({ loaderUrl: LOADER_URL, post, consent: () => true });
    // Granted later: less of its time limit is left when it starts.
    const second = api.captureBlackbox({
      loaderUrl: LOADER_URL,
      post,
      consent: () => new Promise((resolve) => setTimeout(() => resolve(true), 30)),
    });
    const blackbox = await first;
    expect(await second).toBe(blackbox);
    // A remount after completion: a new consent function again.
    expect(await api.captureBlackbox({ loaderUrl: LOADER_URL, post, consent: async () => true })).toBe(blackbox);
    expect(keys).toHaveLength(1);
  });

  it('a call with consent and one without, same options otherwise, post once', async () => {
    const { keys, post } = counted();
    const blackbox = await api.captureBlackbox({ loaderUrl: LOADER_URL, post });
    expect(await api.captureBlackbox({ loaderUrl: LOADER_URL, post, consent: () => true })).toBe(blackbox);
    expect(keys).toHaveLength(1);
  });

  it('other options still make a call of their own', async () => {
    const { keys, post } = counted();
    await api.captureBlackbox({ loaderUrl: LOADER_URL, post, consent: () => true });
    await api.captureBlackbox({
      loaderUrl: LOADER_URL,
      post: { ...post, headers: { 'checkout-id': 'c-2' } },
      consent: () => true,
    });
    expect(keys).toHaveLength(2);
  });
});
