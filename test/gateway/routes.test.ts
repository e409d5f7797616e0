// The gateway's router (src/gateway/routes.ts): routes matched in order, exact or by prefix;
// 404 and 405 with stable codes; every answer counted by route and status, every refusal by
// its code; each 4xx its handler did not log handed to onRefusal, never a 5xx but shutting_down.
import { describe, expect, it } from 'vitest';
import { toldRefusal } from '../../src/gateway/log.js';
import { router, type RefusalListener } from '../../src/gateway/routes.js';
import { createFirstPartyProxy } from '../../src/server/proxy/proxy.js';
import { counterValues } from '../../src/server/status/tally.js';

const counted = (metric: string, labels: Record<string, string>) =>
  counterValues().find(
    (counter) => counter.metric === metric && JSON.stringify(counter.labels) === JSON.stringify(labels),
  )?.value ?? 0;

const answer = (status: number, body?: unknown, type = 'application/json') =>
  new Response(body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body), {
    status,
    headers: body === undefined ? {} : { 'content-type': type },
  });

function routed(onRefusal?: RefusalListener) {
  return router(
    [
      { path: '/healthz', methods: ['GET', 'HEAD'], handler: () => answer(200, { status: 'ok' }) },
      { path: '/decisions/*', handler: (request) => answer(200, { path: new URL(request.url).pathname }) },
      { path: '/told', handler: () => toldRefusal(answer(401, { error: { code: 'decisions_unauthorized' } })) },
      { path: '/plain', handler: () => answer(403, 'no', 'text/plain') },
      { path: '/flat', handler: () => answer(429, { error: 'too_many_checkouts' }) },
      { path: '/odd', handler: () => answer(400, { error: { code: 'Not A Code!' } }) },
      { path: '/capital', handler: () => answer(400, { error: { code: 'Queue_full' } }) },
      { path: '/trailing', handler: () => answer(400, { error: { code: 'queue_full!' } }) },
      { path: '/not-json', handler: () => answer(400, { error: { code: 'queue_full' } }, 'x-application/json') },
      {
        path: '/empty',
        handler: () => new Response(null, { status: 400, headers: { 'content-type': 'application/json' } }),
      },
      { path: '/broken', handler: () => answer(400, '{not json') },
      { path: '/failing', handler: () => answer(503, { error: { code: 'queue_full' } }) },
      { path: '/closing', handler: () => answer(503, { error: { code: 'shutting_down' } }) },
    ],
    onRefusal,
  );
}
const get = (handler: ReturnType<typeof router>, path: string, method = 'GET') =>
  handler(new Request(`http://gateway.test${path}`, { method }));

describe('the router', () => {
  it('matches a path exactly, or under a prefix ending in /*', async () => {
    const handler = routed();
    expect(await (await get(handler, '/healthz')).json()).toEqual({ status: 'ok' });
    expect(await (await get(handler, '/decisions/order-1')).json()).toEqual({ path: '/decisions/order-1' });
    expect((await get(handler, '/healthz/more')).status).toBe(404);
    expect((await get(handler, '/decisions')).status).toBe(404);
  });

  it('answers another path 404 not_found and another method 405 with Allow, both no-store', async () => {
    const handler = routed();
    const missing = await get(handler, '/nowhere');
    expect([missing.status, await missing.json(), missing.headers.get('cache-control')]).toEqual([
      404,
      { error: { code: 'not_found' } },
      'no-store',
    ]);
    const wrong = await get(handler, '/healthz', 'POST');
    expect([wrong.status, await wrong.json(), wrong.headers.get('allow')]).toEqual([
      405,
      { error: { code: 'method_not_allowed' } },
      'GET, HEAD',
    ]);
    expect(wrong.headers.get('cache-control')).toBe('no-store');
  });

  it('counts each answer by route and status, and each refusal by its code', async () => {
    const handler = routed();
    const before = {
      ok: counted('requests', { route: '/healthz', status: '200' }),
      unmatched: counted('requests', { route: 'unmatched', status: '404' }),
      notFound: counted('refusals', { code: 'not_found' }),
      plain: counted('refusals', { code: 'status_403' }),
      flat: counted('refusals', { code: 'too_many_checkouts' }),
      odd: counted('refusals', { code: 'status_400' }),
      failing: counted('refusals', { code: 'queue_full' }),
    };
    await get(handler, '/healthz');
    await get(handler, '/nowhere');
    await get(handler, '/plain');
    await get(handler, '/flat');
    await get(handler, '/odd');
    // Each of these is no code of the kit's: a capital, a character after it, a type that is not
    // JSON, a JSON refusal without a body.
    for (const path of ['/capital', '/trailing', '/not-json', '/empty']) await get(handler, path);
    await get(handler, '/broken');
    await get(handler, '/failing');
    expect({
      ok: counted('requests', { route: '/healthz', status: '200' }) - before.ok,
      unmatched: counted('requests', { route: 'unmatched', status: '404' }) - before.unmatched,
      notFound: counted('refusals', { code: 'not_found' }) - before.notFound,
      // Without a JSON body, or with a code that is not the kit's words: its status.
      plain: counted('refusals', { code: 'status_403' }) - before.plain,
      flat: counted('refusals', { code: 'too_many_checkouts' }) - before.flat,
      odd: counted('refusals', { code: 'status_400' }) - before.odd,
      failing: counted('refusals', { code: 'queue_full' }) - before.failing,
    }).toEqual({ ok: 1, unmatched: 1, notFound: 1, plain: 1, flat: 1, odd: 6, failing: 1 });
    // A success is no refusal.
    expect(counterValues().some((c) => c.metric === 'refusals' && c.labels.code === 'status_200')).toBe(false);
  });

  it('hands each 4xx no handler logged to onRefusal, never a told one or a 5xx but a closing refusal', async () => {
    const refusals: Parameters<RefusalListener>[0][] = [];
    const handler = routed((refusal) => refusals.push(refusal));
    await get(handler, '/healthz');
    await get(handler, '/nowhere', 'PUT');
    await get(handler, '/healthz', 'DELETE');
    await get(handler, '/told');
    await get(handler, '/flat');
    await get(handler, '/failing');
    await get(handler, '/closing');
    expect(refusals).toEqual([
      { route: 'unmatched', method: 'PUT', status: 404, code: 'not_found' },
      { route: '/healthz', method: 'DELETE', status: 405, code: 'method_not_allowed' },
      { route: '/flat', method: 'GET', status: 429, code: 'too_many_checkouts' },
      // A closing instance's refusal tells no failure through onError: the router tells it.
      { route: '/closing', method: 'GET', status: 503, code: 'shutting_down' },
    ]);
  });

  it('answers the handler a refusal came from, untouched by the count', async () => {
    const handler = routed();
    const told = await get(handler, '/told');
    expect([told.status, await told.json()]).toEqual([401, { error: { code: 'decisions_unauthorized' } }]);
  });
});

describe("the router and answers that are not the gateway's", () => {
  it("counts a collector's answer relayed by the proxy by its status, never by its words", async () => {
    const fetch = async () =>
      new Response(JSON.stringify({ error: { code: 'x_made_up' } }), {
        status: 404,
        headers: { 'content-type': 'application/json' },
      });
    const iojs = createFirstPartyProxy({ collectorUrl: 'https://collector.example/', fetch });
    const handler = router([{ path: '/iojs/*', handler: iojs }]);
    const before = counted('refusals', { code: 'status_404' });
    const relayed = await get(handler, '/iojs/general5/x.js');
    expect(relayed.status).toBe(404);
    expect(await relayed.json()).toEqual({ error: { code: 'x_made_up' } });
    expect(counted('refusals', { code: 'status_404' }) - before).toBe(1);
    expect(counterValues().some((c) => c.metric === 'refusals' && c.labels.code === 'x_made_up')).toBe(false);
  });

  it('reads at most 4 KiB of a refusal for its code: a larger body is counted by status, and passed on whole', async () => {
    const large = JSON.stringify({ error: { code: 'queue_full' }, pad: 'x'.repeat(5000) });
    const handler = router([{ path: '/large', handler: () => answer(503, large) }]);
    const before = counted('refusals', { code: 'status_503' });
    const response = await get(handler, '/large');
    expect(counted('refusals', { code: 'status_503' }) - before).toBe(1);
    expect(await response.text()).toBe(large);
  });
});
