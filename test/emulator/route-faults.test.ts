// The emulator's route faults on their own (src/emulator/route-faults.ts), around a handler
// without sockets: each request counted by route, delayed by its route's latency, or failed
// by the next fault queued for its route (a status answer, or a dropped connection).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRouteFaults, DropConnection } from '../../src/emulator/route-faults.js';
import type { RouteName } from '../../src/emulator/index.js';

afterEach(() => {
  vi.useRealTimers();
});

function instrumented() {
  const faults = createRouteFaults();
  const seen: string[] = [];
  const route = (request: Request) => new URL(request.url).pathname.slice(1) as RouteName;
  const handler = faults.instrument(route, async (request) => {
    seen.push(new URL(request.url).pathname);
    return new Response('ok');
  });
  const call = (name: string) => handler(new Request(`https://emulator.test/${name}`));
  return { ...faults, seen, call };
}

describe('createRouteFaults', () => {
  it('counts every request by route, faults included', async () => {
    const { call, counts, routeFaults } = instrumented();
    routeFaults.fail('upload', { status: 500 });
    await call('upload');
    await call('upload');
    await call('token');
    expect(Object.fromEntries(counts)).toEqual({ upload: 2, token: 1 });
  });

  it('a fault answers its status as a problem body instead of the handler, once by default', async () => {
    const { call, routeFaults, seen } = instrumented();
    routeFaults.fail('upload', { status: 502 });
    const failed = await call('upload');
    expect(failed.status).toBe(502);
    expect(failed.headers.get('content-type')).toBe('application/problem+json');
    expect(failed.headers.get('retry-after')).toBeNull();
    expect(await failed.json()).toEqual({ title: 'Injected fault', status: 502, detail: 'emulator fault injection' });
    expect(seen).toEqual([]);
    expect((await call('upload')).status).toBe(200);
    expect(seen).toEqual(['/upload']);
  });

  it('only its own route fails', async () => {
    const { call, routeFaults } = instrumented();
    routeFaults.fail('upload', { status: 500 });
    expect((await call('finalize')).status).toBe(200);
    expect((await call('upload')).status).toBe(500);
  });

  it('a fault without a status answers 500; 429 and 503 say Retry-After: 1', async () => {
    const { call, routeFaults } = instrumented();
    routeFaults.fail('token', { times: 1 });
    routeFaults.fail('token', { status: 429 });
    routeFaults.fail('token', { status: 503 });
    const plain = await call('token');
    expect([plain.status, plain.headers.get('retry-after')]).toEqual([500, null]);
    for (const status of [429, 503]) {
      const answer = await call('token');
      expect([answer.status, answer.headers.get('retry-after')]).toEqual([status, '1']);
    }
    expect((await call('token')).status).toBe(200);
  });

  it('`times` fails that many requests, then the next fault queued takes over', async () => {
    const { call, routeFaults } = instrumented();
    routeFaults.fail('status', { status: 500, times: 3 });
    routeFaults.fail('status', { status: 503, times: 2 });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call('status')).status);
    expect(statuses).toEqual([500, 500, 500, 503, 503, 200]);
  });

  it('a dropped connection is thrown for the server to act on, and counts as one of `times`', async () => {
    const { call, routeFaults, seen } = instrumented();
    routeFaults.fail('finalize', { drop: true, times: 2 });
    await expect(call('finalize')).rejects.toBeInstanceOf(DropConnection);
    await expect(call('finalize')).rejects.toBeInstanceOf(DropConnection);
    expect((await call('finalize')).status).toBe(200);
    expect(seen).toEqual(['/finalize']);
  });

  it("latency delays its route's requests, before a fault too; others go at once", async () => {
    vi.useFakeTimers();
    const { call, routeFaults } = instrumented();
    routeFaults.latency('upload', 250);
    routeFaults.fail('upload', { status: 500 });
    let done = false;
    const delayed = Promise.resolve(call('upload')).then((response) => {
      done = true;
      return response;
    });
    await vi.advanceTimersByTimeAsync(249);
    expect(done).toBe(false);
    expect((await call('token')).status).toBe(200);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
    expect((await delayed).status).toBe(500);
  });

  it('clear removes the faults and the latencies, not the counts', async () => {
    vi.useFakeTimers();
    const { call, routeFaults, counts } = instrumented();
    routeFaults.fail('upload', { status: 500, times: 5 });
    routeFaults.latency('upload', 10_000);
    routeFaults.clear();
    expect((await call('upload')).status).toBe(200);
    expect(counts.get('upload')).toBe(1);
  });
});
