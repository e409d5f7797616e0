// The door of POST /device-risk (src/gateway/checkout-door.ts) on a memory store: the order of
// an Order-Token, each refusal typed and logged (the sub's rule told, never the sub), one
// checkout per order, and the claim given back when the endpoint does not accept a checkout.
// outcomes.emulator.test.ts runs it in `serve` as a process.
import { describe, expect, it, vi } from 'vitest';
import { checkoutDoor } from '../../src/gateway/checkout-door.js';
import { ORDER_CLAIM_LEASE_MS } from '../../src/gateway/order-claim.js';
import { OUTBOX_TTL_MS } from '../../src/gateway/outbox.js';
import type { LogFields } from '../../src/gateway/log.js';
import { mintOrderToken } from '../../src/gateway/order-token.js';
import { createMemoryStore } from '../../src/server/store/store.js';
import { DeviceRiskError } from '../../src/server/errors.js';
import { ORDER_SECRET } from '../support/gateway.js';
import { createDeviceRiskHandler, type DeviceRiskHandlerOptions } from '../../src/server/endpoint/handler.js';
import type { CheckQueue } from '../../src/server/queue/queue.js';
import { isHeldAnswer, isMaybeHeldAnswer } from '../../src/server/endpoint/queued.js';
import { handQueue } from '../support/hand-queue.js';
import { storeAwayAtRead } from '../support/store-faults.js';
import { blackboxOf } from '../support/kit.js';
import { stubClient } from '../support/stub-client.js';

const SHOP = 'https://shop.example';

/** A door on a memory store whose clock is `clock.now` (the real one unless moved). */
async function door(clock = { now: Date.now() }, store = createMemoryStore({ now: () => clock.now })) {
  const lines: Array<[string, LogFields | undefined]> = [];
  const opened = await checkoutDoor({
    store,
    orderSecret: ORDER_SECRET,
    log: (line, fields) => lines.push([line, fields]),
  });
  return { ...opened, lines, store };
}

/** A checkout under `key` with `token` as its Order-Token (none when undefined). */
const checkout = (token: string | undefined, key: string | null = 'key-1') =>
  new Request('https://gateway.test/device-risk', {
    method: 'POST',
    headers: {
      ...(token === undefined ? {} : { 'order-token': token }),
      ...(key === null ? {} : { 'idempotency-key': key }),
    },
  });
const tokenFor = (order: string, extra: { userReference?: string } = {}) =>
  mintOrderToken(ORDER_SECRET, { customerInternalReference: order, ...extra });

/** The kit's endpoint behind the door (`resolveCustomer`) on `queue`, refusing nothing of its own. */
const endpointBehind = (
  resolveCustomer: DeviceRiskHandlerOptions['resolveCustomer'],
  queue: CheckQueue,
  extra: Partial<DeviceRiskHandlerOptions> = {},
) =>
  createDeviceRiskHandler({
    client: stubClient().client,
    allowedOrigins: [SHOP],
    workflowKey: 1,
    queue,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer,
    onError: () => {},
    onResult: () => {},
    ...extra,
  });

/** A checkout as the page posts it to the endpoint under `key-<tag>`, its blackbox its own, with `token` as its Order-Token. */
const shopCheckout = (token: string, tag: string) =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: {
      origin: SHOP,
      'content-type': 'application/json',
      'idempotency-key': `key-${tag}`,
      'order-token': token,
    },
    body: JSON.stringify({ blackbox: blackboxOf(tag) }),
  });

describe('the checkout door', () => {
  it("a store that does not answer the order's claim (Redis paused): 503 store_unavailable in 3 s, logged; one that fails otherwise is thrown", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const lines: Array<[string, LogFields | undefined]> = [];
      const memory = createMemoryStore();
      let asked = false;
      const hanging = {
        ...memory,
        setIfAbsent: () => {
          asked = true;
          return new Promise<boolean>(() => {});
        },
      };
      const { resolveCustomer } = await checkoutDoor({
        store: hanging,
        orderSecret: ORDER_SECRET,
        log: (line, fields) => lines.push([line, fields]),
      });
      let answer: Response | undefined;
      void resolveCustomer(checkout(await tokenFor('order-1'))).then((a) => (answer = a as Response));
      // The token is checked first (Web Crypto, off the timers): the claim is asked after it.
      while (!asked) await new Promise((resolve) => setImmediate(resolve));
      await vi.advanceTimersByTimeAsync(2_999);
      expect(answer).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect([answer?.status, answer?.headers.get('retry-after')]).toEqual([503, '1']);
      expect(await answer!.json()).toEqual({
        error: {
          code: 'store_unavailable',
          message: "The shop's store did not answer; retry with the same Idempotency-Key",
        },
      });
      expect(lines).toEqual([
        [
          expect.stringMatching(/^refused a checkout: the store did not answer/),
          { level: 'warn', event: 'refused', code: 'store_unavailable' },
        ],
      ]);
      const broken = { ...memory, setIfAbsent: () => Promise.reject(new TypeError('a bug')) };
      const other = await checkoutDoor({ store: broken, orderSecret: ORDER_SECRET, log: () => {} });
      await expect(other.resolveCustomer(checkout(await tokenFor('order-2')))).rejects.toThrow('a bug');
      // A failure of the kit's that does not pass (a damaged file) is thrown too: not a 503.
      const damaged = new DeviceRiskError('invalid_configuration', 'the data file is damaged');
      const refusing = { ...memory, setIfAbsent: () => Promise.reject(damaged) };
      const third = await checkoutDoor({ store: refusing, orderSecret: ORDER_SECRET, log: () => {} });
      await expect(third.resolveCustomer(checkout(await tokenFor('order-3')))).rejects.toBe(damaged);
    } finally {
      vi.useRealTimers();
    }
  });

  it("resolves a checkout to its Order-Token's order, logging nothing", async () => {
    const { resolveCustomer, lines } = await door();
    expect(await resolveCustomer(checkout(await tokenFor('order-1', { userReference: 'user-7' })))).toEqual({
      customerInternalReference: 'order-1',
      userReference: 'user-7',
      signedIn: true,
    });
    expect(lines).toEqual([]);
  });

  it.each([
    ['missing', undefined, 'order_token_missing'],
    ['forged', 'a.b.c', 'order_token_invalid'],
  ])('refuses a %s Order-Token 401 with its code and a WWW-Authenticate, logged', async (_, token, code) => {
    const { resolveCustomer, lines } = await door();
    const answer = (await resolveCustomer(checkout(token))) as Response;
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe('Order-Token');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(await answer.json()).toEqual({ error: { code, message: expect.stringMatching(/Order-Token/) } });
    expect(lines).toEqual([[`refused a checkout: ${code}`, { level: 'warn', event: 'refused', code }]]);
  });

  it('refuses an order the service forbids 422 order_token_sub_invalid, telling the rule and never the sub', async () => {
    const { resolveCustomer, lines } = await door();
    const answer = (await resolveCustomer(checkout(await tokenFor('INV/2026/0001')))) as Response;
    expect(answer.status).toBe(422);
    expect(answer.headers.get('www-authenticate')).toBeNull();
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const { error } = (await answer.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('order_token_sub_invalid');
    expect(lines).toEqual([
      [
        `refused a checkout: order_token_sub_invalid (${error.message})`,
        { level: 'warn', event: 'refused', code: 'order_token_sub_invalid' },
      ],
    ]);
    expect(lines[0]![0]).toMatch(/\(the Order-Token's sub: customerInternalReference must/);
    expect(lines[0]![0]).not.toContain('INV/2026/0001');
  });

  it('lets an error that is not a refused token through (a bug is not a 401)', async () => {
    const { resolveCustomer } = await door();
    const broken = checkout(await tokenFor('order-1'));
    Object.defineProperty(broken, 'headers', {
      get: () => {
        throw new TypeError('not a header list');
      },
    });
    await expect(resolveCustomer(broken)).rejects.toThrow(TypeError);
  });

  it('takes one checkout per order: another key is 409 order_already_checked, logged; the same key goes on', async () => {
    const { resolveCustomer, lines } = await door();
    const token = await tokenFor('order-9');
    expect(await resolveCustomer(checkout(token, 'first'))).toEqual({
      customerInternalReference: 'order-9',
      signedIn: false,
    });
    const again = (await resolveCustomer(checkout(token, 'second'))) as Response;
    expect(again.status).toBe(409);
    expect(again.headers.get('cache-control')).toBe('no-store');
    expect(await again.json()).toEqual({
      error: { code: 'order_already_checked', message: 'this order already has a checkout of its own' },
    });
    expect(lines).toEqual([
      [
        'refused a checkout: order_already_checked (order order-9)',
        { level: 'warn', event: 'refused', code: 'order_already_checked', reference: 'order-9' },
      ],
    ]);
    // A retry under the first key is the kit's to answer (as it answered the first).
    expect(await resolveCustomer(checkout(token, 'first'))).toEqual({
      customerInternalReference: 'order-9',
      signedIn: false,
    });
  });

  it('without an Idempotency-Key, a second checkout of the order is refused too', async () => {
    const { resolveCustomer } = await door();
    const token = await tokenFor('order-n');
    expect(await resolveCustomer(checkout(token, null))).toEqual({
      customerInternalReference: 'order-n',
      signedIn: false,
    });
    expect(((await resolveCustomer(checkout(token, null))) as Response).status).toBe(409);
  });

  it.each([
    [400, true],
    [300, true],
    [503, true],
    [409, false],
    [202, false],
    [299, false],
  ])('after an answer %i, gives the order back: %s', async (status, givenBack) => {
    const { resolveCustomer, answered } = await door();
    const token = await tokenFor('order-a');
    const first = checkout(token, 'first');
    await resolveCustomer(first);
    await answered(first, new Response(null, { status }));
    const next = await resolveCustomer(checkout(token, 'next'));
    if (givenBack) expect(next).toEqual({ customerInternalReference: 'order-a', signedIn: false });
    else expect((next as Response).status).toBe(409);
  });

  it('keeps the order on a 503 whose checkout the queue holds all the same: another key for it is refused', async () => {
    const clock = { now: Date.now() };
    const { resolveCustomer, answered } = await door(clock);
    // The endpoint's second read is the key's record after the add: it fails, the job held.
    const store = storeAwayAtRead(2, 1);
    const hand = handQueue();
    const endpoint = endpointBehind(resolveCustomer, hand.queue, { store });
    const token = await tokenFor('order-held');
    const first = shopCheckout(token, 'held');
    const answer = await endpoint(first);
    expect([answer.status, hand.jobs.length]).toEqual([503, 1]);
    await answered(first, answer);
    // Kept for its decision: past the claim's lease too.
    clock.now += ORDER_CLAIM_LEASE_MS;
    expect(((await resolveCustomer(checkout(token, 'key-other'))) as Response).status).toBe(409);
    // Its own retry goes on to the endpoint, which answers it from the job.
    expect(await resolveCustomer(checkout(token, 'key-held'))).toEqual({
      customerInternalReference: 'order-held',
      signedIn: false,
    });
    await endpoint.close();
  });

  it("leaves the order's claim to its lease on a 503 whose add did not answer in time: neither kept nor given back", async () => {
    const clock = { now: Date.now() };
    const { resolveCustomer, answered } = await door(clock);
    const hand = handQueue();
    // The queue's Redis frozen under the add: it never answers.
    hand.queue.add = () => new Promise(() => {});
    const endpoint = endpointBehind(resolveCustomer, hand.queue, { storeTimeoutMs: 50 });
    const token = await tokenFor('order-maybe');
    const first = shopCheckout(token, 'maybe');
    const answer = await endpoint(first);
    expect([answer.status, isMaybeHeldAnswer(answer), isHeldAnswer(answer)]).toEqual([503, true, false]);
    await answered(first, answer);
    // Not given back: the add may still land, and another key of the order is refused.
    clock.now += ORDER_CLAIM_LEASE_MS - 1;
    expect(((await resolveCustomer(checkout(token, 'key-other'))) as Response).status).toBe(409);
    // Not kept for a week either: nothing may have been queued, and the lease ends it.
    clock.now += 1;
    expect(await resolveCustomer(checkout(token, 'key-other'))).toMatchObject({
      customerInternalReference: 'order-maybe',
    });
    await endpoint.close();
  });

  it('a refused attempt gives back nothing once its retry under the same key was accepted', async () => {
    const { resolveCustomer, answered } = await door();
    const token = await tokenFor('order-raced');
    // The first attempt is still on its way (a starved instance) when the browser's retry comes.
    const first = checkout(token, 'key-raced');
    await resolveCustomer(first);
    const retry = checkout(token, 'key-raced');
    await resolveCustomer(retry);
    await answered(retry, new Response(null, { status: 202 }));
    await answered(first, new Response(null, { status: 503 }));
    expect(((await resolveCustomer(checkout(token, 'key-other'))) as Response).status).toBe(409);
    // Its own retries still go on, kept or not.
    expect(await resolveCustomer(checkout(token, 'key-raced'))).toMatchObject({
      customerInternalReference: 'order-raced',
    });
  });

  it("gives back only the claim of the checkout answered, never another's", async () => {
    const { resolveCustomer, answered } = await door();
    const token = await tokenFor('order-b');
    const first = checkout(token, 'first');
    await resolveCustomer(first);
    // A refused checkout holds no claim: its answer gives nothing back.
    const refused = checkout(token, 'second');
    expect(((await resolveCustomer(refused)) as Response).status).toBe(409);
    await answered(refused, new Response(null, { status: 400 }));
    expect(((await resolveCustomer(checkout(token, 'third'))) as Response).status).toBe(409);
    // Nor does a checkout the door never saw.
    await answered(checkout(token, 'first'), new Response(null, { status: 400 }));
    expect(((await resolveCustomer(checkout(token, 'third'))) as Response).status).toBe(409);
  });

  it('a claim whose checkout got no answer holds its order for its lease only, then the next checkout is taken', async () => {
    // The store took the claim after the door had answered 503 (its time limit), or the
    // instance died mid-checkout: no answer ever comes to give the claim back or keep it.
    const clock = { now: Date.now() };
    const { resolveCustomer } = await door(clock);
    const token = await tokenFor('order-lost');
    await resolveCustomer(checkout(token, 'lost'));
    clock.now += ORDER_CLAIM_LEASE_MS - 1;
    expect(((await resolveCustomer(checkout(token, 'next'))) as Response).status).toBe(409);
    clock.now += 1;
    expect(await resolveCustomer(checkout(token, 'next'))).toEqual({
      customerInternalReference: 'order-lost',
      signedIn: false,
    });
  });

  it.each([
    ['accepted (202)', 202],
    ['decided at once (200)', 200],
  ])('a checkout %s keeps its order for its decision (a week), past the lease', async (_, status) => {
    const clock = { now: Date.now() };
    const { resolveCustomer, answered, lines } = await door(clock);
    const token = await tokenFor('order-kept');
    const first = checkout(token, 'first');
    await resolveCustomer(first);
    clock.now += ORDER_CLAIM_LEASE_MS - 1_000;
    await answered(first, new Response(null, { status }));
    clock.now += OUTBOX_TTL_MS - 1_000;
    expect(((await resolveCustomer(checkout(token, 'next'))) as Response).status).toBe(409);
    clock.now += 1_000;
    expect(await resolveCustomer(checkout(token, 'next'))).toMatchObject({ customerInternalReference: 'order-kept' });
    expect(lines.map(([, fields]) => fields?.code)).toEqual(['order_already_checked']);
  });

  it("a retry under the claim's key, accepted, keeps the claim the first checkout left", async () => {
    const clock = { now: Date.now() };
    const { resolveCustomer, answered } = await door(clock);
    const token = await tokenFor('order-retried');
    await resolveCustomer(checkout(token, 'key-r')); // answered 503 by the door's time limit: no answer hook
    clock.now += 60_000;
    const retry = checkout(token, 'key-r');
    await resolveCustomer(retry);
    await answered(retry, new Response(null, { status: 202 }));
    clock.now += ORDER_CLAIM_LEASE_MS;
    expect(((await resolveCustomer(checkout(token, 'other'))) as Response).status).toBe(409);
  });

  it('a claim given back by a refused attempt is taken again by its retry under the same key, once accepted', async () => {
    // Attempt A holds the claim; its retry B (same key) goes on beside it; A is refused (503)
    // and gives the claim back; B is accepted: the order is claimed again, for its decision.
    const clock = { now: Date.now() };
    const { resolveCustomer, answered, lines } = await door(clock);
    const token = await tokenFor('order-raced');
    const first = checkout(token, 'key-r');
    const retry = checkout(token, 'key-r');
    await resolveCustomer(first);
    await resolveCustomer(retry);
    await answered(first, new Response(null, { status: 503 }));
    await answered(retry, new Response(null, { status: 202 }));
    clock.now += ORDER_CLAIM_LEASE_MS;
    expect(((await resolveCustomer(checkout(token, 'other'))) as Response).status).toBe(409);
    expect(lines.map(([, fields]) => fields?.code)).toEqual(['order_already_checked']);
  });

  it('an accepted checkout whose claim cannot be kept is logged with its order, never thrown', async () => {
    const clock = { now: Date.now() };
    const memory = createMemoryStore({ now: () => clock.now });
    let away = false;
    const flaky = {
      ...memory,
      compareAndSet: (...args: Parameters<typeof memory.compareAndSet>) =>
        away ? Promise.reject(new DeviceRiskError('store_unavailable', 'no answer')) : memory.compareAndSet(...args),
    };
    const { resolveCustomer, answered, lines } = await door(clock, flaky);
    const token = await tokenFor('order-unkept');
    const first = checkout(token, 'first');
    await resolveCustomer(first);
    away = true;
    await answered(first, new Response(null, { status: 202 }));
    // And one whose lease ran out before its answer, its order taken by another key.
    const late = checkout(await tokenFor('order-late'), 'late');
    await resolveCustomer(late);
    clock.now += ORDER_CLAIM_LEASE_MS;
    await resolveCustomer(checkout(await tokenFor('order-late'), 'taker'));
    away = false;
    await answered(late, new Response(null, { status: 202 }));
    expect(lines).toEqual([
      [
        "order_claim_not_kept: the claim of an accepted checkout's order was not kept: the store did not answer ([blackbox-capture/server] no answer): the claim may end with its lease, after which another checkout of the order would be checked (order order-unkept)",
        { level: 'error', event: 'error', code: 'order_claim_not_kept', reference: 'order-unkept' },
      ],
      [
        "order_claim_not_kept: the claim of an accepted checkout's order was not kept: another checkout of the order holds its claim (this one was accepted after its lease): the order is checked twice (order order-late)",
        { level: 'error', event: 'error', code: 'order_claim_not_kept', reference: 'order-late' },
      ],
    ]);
  });
});

describe('an add that answered late, and landed', () => {
  it('keeps the order once the queue holds it: after the lease, another checkout of it is 409', async () => {
    const clock = { now: Date.now() };
    const store = createMemoryStore({ now: () => clock.now });
    const door = await checkoutDoor({ store, orderSecret: ORDER_SECRET, log: () => {} });
    const hand = handQueue();
    const add = hand.queue.add;
    let slow = true;
    // The queue's Redis frozen a moment: the add answers after the endpoint's 50 ms, and lands.
    hand.queue.add = (job, lateAt) =>
      slow ? new Promise((resolve) => setTimeout(() => resolve(add(job, lateAt)), 200)) : add(job, lateAt);
    const endpoint = createDeviceRiskHandler({
      client: stubClient().client,
      allowedOrigins: [SHOP],
      workflowKey: 1,
      queue: hand.queue,
      checkoutsPerAddress: false,
      checkoutsPerCustomer: false,
      storeTimeoutMs: 50,
      resolveCustomer: (request) => door.resolveCustomer(request),
      onError: () => {},
      onResult: () => {},
    });
    const token = await mintOrderToken(ORDER_SECRET, { customerInternalReference: 'order-late' });
    const request = (key: string) =>
      new Request(`${SHOP}/device-risk`, {
        method: 'POST',
        headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key, 'order-token': token },
        body: JSON.stringify({ blackbox: blackboxOf(key) }),
      });
    const first = request('key-first-0001');
    const answer = await endpoint(first);
    await door.answered(first, answer);
    expect([answer.status, isMaybeHeldAnswer(answer)]).toEqual([503, true]);
    await vi.waitFor(() => expect(hand.jobs).toHaveLength(1));
    slow = false;
    // Kept once its add landed (the door's kept mark beside the claim).
    await expect.poll(() => store.get('gateway:order-claim:order-late:kept')).toBe('key-first-0001');
    // No retry under its key came: its lease lapses, and the order is still its.
    clock.now += ORDER_CLAIM_LEASE_MS;
    const second = request('key-second-0002');
    const again = await endpoint(second);
    await door.answered(second, again);
    expect(again.status).toBe(409);
    expect(hand.jobs).toHaveLength(1);
    await endpoint.close();
  });
});
