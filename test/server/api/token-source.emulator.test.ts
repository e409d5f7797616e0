// The OAuth client-credentials token source, against the emulator.
import { afterEach, describe, expect, it } from 'vitest';
import { collectGarbage } from '../../support/gc.js';
import { createManualClock, startEmulator, type Emulator } from '../../../src/emulator/index.js';
import { createMemoryStore, createTokenSource, isDeviceRiskError, TOKEN_URLS } from '../../../src/server/index.js';
import { storeNamespace } from '../../../src/server/api/seal.js';
import { untilAborted } from '../../support/until-aborted.js';
import { tokenSourceOn } from '../../support/kit.js';

const UA = 'AcmeShop Checkout/1.0';
let emulator: Emulator;
/** A clock that stands still: the waits the source asks for are exactly the Retry-After. */
const frozenClock = () => 1_800_000_000_000;
afterEach(async () => {
  await emulator?.close();
});

const source = (extra: Partial<Parameters<typeof createTokenSource>[0]> = {}) => tokenSourceOn(emulator, extra);

describe('createTokenSource', () => {
  it('sends exactly the spec request and caches the token', async () => {
    const seen: Array<{ url: string; init: RequestInit }> = [];
    emulator = await startEmulator();
    const tokens = source({
      fetch: (async (url: string, init: RequestInit) => {
        seen.push({ url, init });
        return fetch(url, init);
      }) as typeof fetch,
    });
    const token = await tokens.getToken();
    expect(await tokens.getToken()).toBe(token);
    expect(emulator.inspect.requests('token')).toBe(1);
    const { url, init } = seen[0]!;
    const headers = init.headers as Record<string, string>;
    expect(url).toBe(emulator.tokenUrl);
    expect(init.method).toBe('POST');
    expect(init.redirect).toBe('manual');
    expect(init.body).toBe('grant_type=client_credentials');
    expect(headers.accept).toBe('application/json');
    expect(headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(headers.authorization).toBe(
      'Basic ' + Buffer.from(`${emulator.clientId}:${emulator.clientSecret}`).toString('base64'),
    ); // plain characters need no escaping
    expect(headers['user-agent']).toBe(UA);
  });

  it('form-encodes client id and secret before Basic (RFC 6749 2.3.1), so any characters work', async () => {
    emulator = await startEmulator({ clientId: 'client id:1', clientSecret: 's3cr:t+/=%é ok' });
    expect(await source().getToken()).toBeTruthy();
  });

  it('concurrent callers share one request', async () => {
    emulator = await startEmulator();
    emulator.faults.latency('token', 100);
    const tokens = source();
    const all = await Promise.all(Array.from({ length: 25 }, () => tokens.getToken()));
    expect(new Set(all).size).toBe(1);
    expect(emulator.inspect.requests('token')).toBe(1);
  });

  it('refreshes shortly before expires_in runs out', async () => {
    const clock = createManualClock();
    emulator = await startEmulator({ clock });
    const tokens = source({ now: clock.now, refreshMarginSeconds: 60 });
    const first = await tokens.getToken();
    clock.advance((3600 - 61) * 1000);
    expect(await tokens.getToken()).toBe(first);
    clock.advance(2000);
    const second = await tokens.getToken();
    expect(second).not.toBe(first);
    expect(emulator.inspect.requests('token')).toBe(2);
  });

  it('on 429 waits Retry-After and tries again', async () => {
    emulator = await startEmulator();
    emulator.faults.fail('token', { times: 1, status: 429 });
    const waits: number[] = [];
    expect(await source({ sleep: async (ms) => void waits.push(ms), now: frozenClock }).getToken()).toBeTruthy();
    expect(emulator.inspect.requests('token')).toBe(2);
    expect(waits).toEqual([1000]); // the emulator's Retry-After: 1
  });

  it('gives up on persistent 429 with a typed rate_limited error', async () => {
    emulator = await startEmulator();
    emulator.faults.fail('token', { times: 10, status: 429 });
    const waits: number[] = [];
    const error = await source({ maxAttempts: 2, sleep: async (ms) => void waits.push(ms), now: frozenClock })
      .getToken()
      .catch((e: unknown) => e);
    expect(waits).toEqual([1000]); // between the two attempts; none after the last
    expect(isDeviceRiskError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'rate_limited', status: 429, retryAfter: 1 });
  });

  it.each([
    [401, 'a wrong secret', { clientSecret: 'wrong' }],
    [400, 'a token URL that answers 400', {}],
    [403, 'a token URL that answers 403', {}],
  ])('fails at once on %s (%s) with token_rejected', async (status, _, extra) => {
    emulator = await startEmulator();
    if (!('clientSecret' in extra)) emulator.faults.fail('token', { times: 5, status });
    const error = await source(extra)
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'token_rejected', status });
    expect(emulator.inspect.requests('token')).toBe(1);
  });

  it('retries 5xx and dropped connections', async () => {
    emulator = await startEmulator();
    emulator.faults.fail('token', { times: 1, status: 503 });
    emulator.faults.fail('token', { times: 1, drop: true });
    const waits: number[] = [];
    expect(await source({ sleep: async (ms) => void waits.push(ms) }).getToken()).toBeTruthy();
    expect(waits).toHaveLength(2); // a backoff before each retry
    expect(emulator.inspect.requests('token')).toBe(3);
  });

  it('a failed request is not cached: the next call tries again', async () => {
    emulator = await startEmulator();
    emulator.faults.fail('token', { times: 1, status: 401 });
    const tokens = source();
    await expect(tokens.getToken()).rejects.toMatchObject({ code: 'token_rejected' });
    expect(await tokens.getToken()).toBeTruthy();
  });

  it('does not follow redirects', async () => {
    emulator = await startEmulator();
    const redirecting = (async () =>
      new Response(null, { status: 302, headers: { location: 'https://evil.example/' } })) as typeof fetch;
    await expect(source({ fetch: redirecting }).getToken()).rejects.toMatchObject({
      code: 'token_rejected',
      status: 302,
    });
  });

  it('refuses a token URL that is not https, except loopback', () => {
    expect(() =>
      createTokenSource({
        clientId: 'a',
        clientSecret: 'b',
        tokenUrl: 'http://auth.example/oauth2/token',
        userAgent: UA,
      }),
    ).toThrow(/https/);
    expect(() =>
      createTokenSource({
        clientId: 'a',
        clientSecret: 'b',
        tokenUrl: 'http://localhost:9/oauth2/token',
        userAgent: UA,
      }),
    ).not.toThrow();
    expect(() => createTokenSource({ clientId: 'a', clientSecret: 'b', userAgent: UA })).toThrow(/region/);
    expect(() => createTokenSource({ clientId: 'a', clientSecret: 'b', region: 'EU', userAgent: '' })).toThrow(
      /userAgent/,
    );
  });

  it('maps regions to the three regional token hosts', () => {
    expect(TOKEN_URLS).toEqual({
      US: 'https://auth.amer-1.jumio.ai/oauth2/token',
      EU: 'https://auth.emea-1.jumio.ai/oauth2/token',
      SG: 'https://auth.apac-1.jumio.ai/oauth2/token',
    });
    expect(createTokenSource({ clientId: 'a', clientSecret: 'b', region: 'SG', userAgent: UA }).tokenUrl).toBe(
      TOKEN_URLS.SG,
    );
  });

  it('keeps the secret and tokens out of errors and JSON', async () => {
    emulator = await startEmulator({ clientSecret: 'S3CR3T-value' });
    const tokens = createTokenSource({
      clientId: emulator.clientId,
      clientSecret: 'wrong-S3CR3T',
      tokenUrl: emulator.tokenUrl,
      userAgent: UA,
    });
    const error = (await tokens.getToken().catch((e: unknown) => e)) as Error;
    const text = `${error.message} ${JSON.stringify(error)} ${String(error.stack)} ${JSON.stringify(tokens)}`;
    expect(text).not.toMatch(/S3CR3T/);
    expect(text).not.toContain(Buffer.from(`${emulator.clientId}:wrong-S3CR3T`).toString('base64'));
  });

  it("uses a shared store: a second instance reuses the first one's token", async () => {
    emulator = await startEmulator();
    const store = createMemoryStore();
    const a = await source({ store }).getToken();
    const b = await source({ store }).getToken();
    expect(b).toBe(a);
    expect(emulator.inspect.requests('token')).toBe(1);
  });

  describe('waits that end', () => {
    /** A token service stub: each call answers the next of `answers` (the last one repeats). */
    const stub = (...answers: Array<() => Response | Promise<Response>>) => {
      const calls: number[] = [];
      const fetchStub = (async (_url: string, init: RequestInit) => {
        calls.push(Date.now());
        const answer = answers[Math.min(calls.length - 1, answers.length - 1)]!;
        return Promise.race([answer(), untilAborted(init.signal)]);
      }) as unknown as typeof fetch;
      return { calls, fetchStub };
    };
    const tooMany = (retryAfter: string) => () =>
      new Response('{"title":"Too Many Requests"}', { status: 429, headers: { 'retry-after': retryAfter } });
    const granted = (expiresIn: unknown) => () =>
      Response.json({ access_token: `at-${Math.random()}`, token_type: 'Bearer', expires_in: expiresIn });
    // A token URL of its own for each source: the process-wide rate limit is per token URL, and
    // these stubs never connect to it.
    let port = 9000;
    const offline = (extra: Partial<Parameters<typeof createTokenSource>[0]>) =>
      createTokenSource({
        clientId: 'id',
        clientSecret: 'secret',
        tokenUrl: `http://127.0.0.1:${port++}/oauth2/token`,
        userAgent: UA,
        ...extra,
      });

    it.each([
      ['86400 seconds', '86400', 86400],
      ['a date a day ahead', new Date(Date.now() + 86_400_000).toUTCString(), 86400],
      ['3000000 seconds (past the largest setTimeout)', '3000000', 3_000_000],
    ])(
      'a 429 with Retry-After of %s rejects at once with rate_limited and the wait, instead of stalling',
      async (_, header, seconds) => {
        const { calls, fetchStub } = stub(tooMany(header), granted(3600));
        const error = await offline({ fetch: fetchStub })
          .getToken()
          .catch((e: unknown) => e);
        expect(error).toMatchObject({ code: 'rate_limited', status: 429 });
        expect(Math.abs((error as { retryAfter: number }).retryAfter - seconds)).toBeLessThanOrEqual(60); // the date was written when the table was
        expect(calls).toHaveLength(1); // not retried after 1 ms either
      },
    );

    it.each([
      ['no access_token', { token_type: 'Bearer', expires_in: 3600 }],
      ['an empty access_token', { access_token: '', token_type: 'Bearer' }],
      ['token_type MAC', { access_token: 'at', token_type: 'MAC' }],
      ['no token_type', { access_token: 'at' }],
      ['a body that is not JSON', 'not json'],
    ])('a 200 answer with %s is invalid_response, not a token', async (_, body) => {
      const { calls, fetchStub } = stub(() => (typeof body === 'string' ? new Response(body) : Response.json(body)));
      await expect(offline({ fetch: fetchStub }).getToken()).rejects.toMatchObject({
        code: 'invalid_response',
        operation: 'token',
      });
      expect(calls).toHaveLength(1);
    });

    it('token_type is compared without case (bearer)', async () => {
      const { fetchStub } = stub(() => Response.json({ access_token: 'at-lower', token_type: 'bearer' }));
      expect(await offline({ fetch: fetchStub }).getToken()).toBe('at-lower');
    });

    it('a Retry-After within maxRetryAfterSeconds is waited for, then the request is made again', async () => {
      const { calls, fetchStub } = stub(tooMany('2'), granted(3600));
      const waits: number[] = [];
      expect(
        await offline({ fetch: fetchStub, sleep: async (ms) => void waits.push(ms), now: frozenClock }).getToken(),
      ).toMatch(/^at-/);
      expect(calls).toHaveLength(2);
      expect(waits).toEqual([2000]);
    });

    it('timeoutMs bounds the whole call: a Retry-After that would outlast it fails at once', async () => {
      const { calls, fetchStub } = stub(tooMany('5'), granted(3600));
      await expect(offline({ fetch: fetchStub, timeoutMs: 1000 }).getToken()).rejects.toMatchObject({
        code: 'rate_limited',
        retryAfter: 5,
      });
      expect(calls).toHaveLength(1);
    });

    it('timeoutMs bounds a token service that never answers, even when garbage is collected meanwhile', async () => {
      const { calls, fetchStub } = stub(() => new Promise<Response>(() => {}));
      const collector = setInterval(() => collectGarbage(), 10);
      try {
        await expect(offline({ fetch: fetchStub, timeoutMs: 300 }).getToken()).rejects.toMatchObject({
          code: 'network_error',
          operation: 'token',
        });
      } finally {
        clearInterval(collector);
      }
      expect(calls).toHaveLength(1);
    });

    it('an expires_in below the refresh margin still serves the cache for half the lifetime', async () => {
      let t = 1_000_000;
      const { calls, fetchStub } = stub(granted(30));
      const tokens = offline({ fetch: fetchStub, now: () => t, refreshMarginSeconds: 60 });
      const first = await tokens.getToken();
      t += 14_000;
      expect(await tokens.getToken()).toBe(first);
      expect(calls).toHaveLength(1);
      t += 2_000; // past half of 30 s
      expect(await tokens.getToken()).not.toBe(first);
      expect(calls).toHaveLength(2);
    });

    it.each([
      ['1e308', 1e308, 24 * 3600],
      ['the least taken, 10', 10, 10],
      ['a string of digits', '3600', 3600],
      ['missing', undefined, 3600],
    ])('an expires_in of %s is taken within the documented bounds', async (_, expiresIn, seconds) => {
      let t = 1_000_000;
      const { calls, fetchStub } = stub(granted(expiresIn));
      const tokens = offline({ fetch: fetchStub, now: () => t, refreshMarginSeconds: 0 });
      const first = await tokens.getToken();
      t += seconds * 1000 - 1;
      expect(await tokens.getToken()).toBe(first);
      t += 1;
      expect(await tokens.getToken()).not.toBe(first);
      expect(calls).toHaveLength(2);
    });
  });
});

describe('createTokenSource on a store', () => {
  it('seals a secret so that only a source with the same client secret opens it; tampering is invalid_response', async () => {
    emulator = await startEmulator();
    const a = source({ store: createMemoryStore() });
    const sealed = await a.seal('transaction-token-123');
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/);
    expect(sealed).not.toContain('transaction-token-123');
    expect(await a.seal('transaction-token-123')).not.toBe(sealed); // a fresh IV each time
    expect(await source({ store: createMemoryStore() }).unseal(sealed)).toBe('transaction-token-123');
    const [, iv, data] = sealed.split('.') as [string, string, string];
    const flipped = data.slice(0, -4) + (data.slice(-4, -3) === 'A' ? 'B' : 'A') + data.slice(-3);
    for (const bad of [`v2.${iv}.${data}`, `v1.${iv}`, 'v1..', `v1.${iv}.${flipped}`, 'not sealed']) {
      await expect(a.unseal(bad), bad).rejects.toMatchObject({ code: 'invalid_response', operation: 'store' });
    }
    const other = createTokenSource({
      clientId: emulator.clientId,
      clientSecret: 'another',
      tokenUrl: emulator.tokenUrl,
      userAgent: UA,
    });
    await expect(other.unseal(sealed)).rejects.toMatchObject({ code: 'invalid_response' });
    const otherClient = createTokenSource({
      clientId: 'another-client',
      clientSecret: emulator.clientSecret,
      tokenUrl: emulator.tokenUrl,
      userAgent: UA,
    });
    await expect(otherClient.unseal(sealed)).rejects.toMatchObject({ code: 'invalid_response' });
  });

  it('invalidate(refused) forgets only the refused token: a successor another instance stored stays', async () => {
    emulator = await startEmulator();
    const store = createMemoryStore();
    const a = source({ store });
    const b = source({ store });
    const first = await a.getToken();
    await b.invalidate(first);
    const second = await b.getToken();
    expect(second).not.toBe(first);
    // a was refused the first token late: the store's second one must survive.
    await a.invalidate(first);
    expect(await a.getToken()).toBe(second);
    expect(emulator.inspect.requests('token')).toBe(2);
    await a.invalidate();
    expect(await a.getToken()).not.toBe(second);
  });

  it('keys name the client id, the token host and a tag of the secret, never the secret', async () => {
    emulator = await startEmulator();
    const keys: string[] = [];
    const memory = createMemoryStore();
    const spy = {
      ...memory,
      set: (k: string, v: string, t: number) => {
        keys.push(k);
        return memory.set(k, v, t);
      },
      setIfAbsent: (k: string, v: string, t: number) => {
        keys.push(k);
        return memory.setIfAbsent(k, v, t);
      },
    };
    await source({ store: spy }).getToken();
    const host = encodeURIComponent(new URL(emulator.tokenUrl).host);
    const namespace = await storeNamespace(emulator.clientId, emulator.clientSecret, emulator.tokenUrl);
    expect(namespace).toMatch(new RegExp(`^${emulator.clientId}@${host}#[\\w-]{22}$`));
    expect([...new Set(keys)].sort()).toEqual(
      [`${namespace}:token`, `${namespace}:token-lock`, `${namespace}:token-rate:0`].sort(),
    );
    expect(keys.join()).not.toContain(emulator.clientSecret);
    // Another secret, another tag; the same secret, the same one.
    expect(await storeNamespace(emulator.clientId, 'another secret', emulator.tokenUrl)).not.toBe(namespace);
    expect(await storeNamespace(emulator.clientId, emulator.clientSecret, emulator.tokenUrl)).toBe(namespace);
  });

  it('the store never holds a usable access token: it is sealed with the secret', async () => {
    emulator = await startEmulator();
    const store = createMemoryStore();
    const token = await source({ store }).getToken();
    const stored = await store.get(
      `${await storeNamespace(emulator.clientId, emulator.clientSecret, emulator.tokenUrl)}:token`,
    );
    expect(stored).toBeDefined();
    expect(stored).not.toContain(token);
    // A second source with the same secret opens it, without a request.
    expect(await source({ store }).getToken()).toBe(token);
    expect(emulator.inspect.requests('token')).toBe(1);
  });

  describe('a source only ever uses a token fetched with its own secret', () => {
    it('each on its own default store: the wrong secret is refused by the service, never handed the token', async () => {
      emulator = await startEmulator();
      const rightSource = source();
      const right = await rightSource.getToken();
      const wrong = source({ clientSecret: 'WRONG' });
      const error = await wrong.getToken().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'token_rejected', status: 401 });
      expect(JSON.stringify(error)).not.toContain(right);
      expect(emulator.inspect.requests('token')).toBe(2); // the wrong one asked the service itself
      // Its failure takes nothing from the right one.
      expect(await rightSource.getToken()).toBe(right);
    });

    it('on a shared store: the wrong secret finds nothing, not even a token written under its namespace by hand', async () => {
      emulator = await startEmulator();
      const store = createMemoryStore();
      const right = await source({ store }).getToken();
      // Someone copies the right source's stored token under the wrong secret's namespace.
      const stored = (await store.get(
        `${await storeNamespace(emulator.clientId, emulator.clientSecret, emulator.tokenUrl)}:token`,
      ))!;
      await store.set(`${await storeNamespace(emulator.clientId, 'WRONG', emulator.tokenUrl)}:token`, stored, 60_000);
      await expect(source({ store, clientSecret: 'WRONG' }).getToken()).rejects.toMatchObject({
        code: 'token_rejected',
      });
      expect(emulator.inspect.requests('token')).toBe(2);
      expect(await source({ store }).getToken()).toBe(right);
    });

    it("a wrong secret's 429 backoff and lock do not hold up the right one", async () => {
      emulator = await startEmulator();
      const store = createMemoryStore();
      const wrongNamespace = await storeNamespace(emulator.clientId, 'WRONG', emulator.tokenUrl);
      await store.set(`${wrongNamespace}:token-backoff`, String(Date.now() + 60_000), 60_000);
      await store.set(`${wrongNamespace}:token-lock`, 'held', 60_000);
      expect(await source({ store, timeoutMs: 2000 }).getToken()).toBeTruthy();
    });
  });

  it('a store that fails is store_unavailable with a Retry-After, and no token request is made', async () => {
    emulator = await startEmulator();
    const broken = {
      ...createMemoryStore(),
      get: async () => {
        throw new Error('connection refused');
      },
    };
    const error = await source({ store: broken })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'store_unavailable', retryAfter: 1, operation: 'store' });
    expect(JSON.stringify(error)).not.toContain('connection refused');
    expect(emulator.inspect.requests('token')).toBe(0);
  });

  it('a 429 is written for the fleet with its Retry-After, and a Retry-After beyond the limit fails the others at once', async () => {
    emulator = await startEmulator();
    // The sources and the store on one standing clock: the backoff is neither shortened nor
    // expired by the time a busy machine takes between the calls.
    const store = createMemoryStore({ now: frozenClock });
    const writes: Array<[string, string, number]> = [];
    const spy = {
      ...store,
      set: (k: string, v: string, t: number) => {
        writes.push([k, v, t]);
        return store.set(k, v, t);
      },
    };
    emulator.faults.fail('token', { status: 429 }); // Retry-After: 1
    await expect(source({ store: spy, maxAttempts: 1, now: frozenClock }).getToken()).rejects.toMatchObject({
      code: 'rate_limited',
    });
    const backoff = writes.find(([k]) => k.endsWith(':token-backoff'))!;
    expect(backoff[2]).toBe(1000);
    expect(Number(backoff[1])).toBe(frozenClock() + 1000);
    // Another instance whose limits cannot wait that long fails at once, without asking: it waits for nothing.
    const waits: number[] = [];
    const other = { store, now: frozenClock, sleep: async (ms: number) => void waits.push(ms) };
    await expect(source({ ...other, timeoutMs: 500 }).getToken()).rejects.toMatchObject({
      code: 'rate_limited',
      status: 429,
      retryAfter: 1,
    });
    await expect(source({ ...other, maxRetryAfterSeconds: 0.5 }).getToken()).rejects.toMatchObject({
      code: 'rate_limited',
    });
    expect(waits).toEqual([]);
    expect(emulator.inspect.requests('token')).toBe(1);
  });

  it('a lock holder that answers nothing is waited on within timeoutMs only', async () => {
    emulator = await startEmulator();
    const store = createMemoryStore();
    await store.set(
      `${await storeNamespace(emulator.clientId, emulator.clientSecret, emulator.tokenUrl)}:token-lock`,
      'busy',
      60_000,
    );
    const error = await source({ store, timeoutMs: 200 })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'network_error', operation: 'token' });
    expect(String((error as Error).message)).toContain('another instance');
    expect(emulator.inspect.requests('token')).toBe(0);
  });
});
