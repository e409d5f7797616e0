// Capture outcomes on the server: parsed strictly, told once per capture (with the blackbox,
// or alone when there is none), and recorded as OpenTelemetry metrics, which the SDK's
// in-memory reader counts here.
import { describe, expect, it } from 'vitest';
import type { Emulator } from '../../../src/emulator/index.js';
import { createMemoryStore, type CaptureOutcome, type DeviceRiskHandlerOptions } from '../../../src/server/index.js';
import { parseOutcome } from '../../../src/server/endpoint/outcome.js';
import { recordUpstream } from '../../../src/server/metrics.js';
import { BLACKBOX, blackboxOf, handlerOn, oneAttempt, SHOP, useEmulators } from '../../support/kit.js';
import { useTestMeter } from '../../support/otel.js';

const OUTCOME: CaptureOutcome = { outcome: 'degraded-first-party', scripts: ['fp_static_wdp'], durationMs: 2150 };

const collect = useTestMeter();

/** Every data point of the metric `name`: its attributes and value (a sum, or a histogram's count and sum). */
async function points(name: string) {
  const resourceMetrics = await collect();
  const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  return (metric?.dataPoints ?? []).map((p) => ({
    attributes: p.attributes,
    value:
      typeof p.value === 'number'
        ? p.value
        : { count: (p.value as { count: number }).count, sum: (p.value as { sum: number }).sum },
  }));
}
const valueOf = async (name: string, attributes: Record<string, string>) =>
  (await points(name)).find((p) => JSON.stringify(p.attributes) === JSON.stringify(attributes))?.value ?? 0;

const startEmulator = useEmulators();
let emulator: Emulator;

async function setup(extra: Partial<DeviceRiskHandlerOptions> = {}) {
  emulator = await startEmulator();
  const told: CaptureOutcome[] = [];
  const handler = handlerOn(emulator, {
    client: oneAttempt(),
    resolveCustomer: () => ({ customerInternalReference: 'order-1' }),
    onOutcome: (o) => void told.push(o),
    store: createMemoryStore(),
    ...extra,
  });
  return { handler, told };
}

const post = (body: unknown, key: string | null = 'key-0000000001') =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify(body),
  });

describe('parseOutcome', () => {
  it.each([
    'complete',
    'degraded-first-party',
    'degraded-third-party',
    'timeout-partial',
    'collection_failed',
    'loader_failed',
    'consent_denied',
    'aborted',
  ])('reads the outcome %s', (outcome) => {
    expect(parseOutcome({ outcome, scripts: [], durationMs: 1 })).toEqual({ outcome, scripts: [], durationMs: 1 });
  });

  it('the bounds are included: ten scripts, 0 ms and an hour', () => {
    const ten = Array.from({ length: 10 }, (_, i) => `io_s${i}`);
    expect(parseOutcome({ outcome: 'complete', scripts: ten, durationMs: 0 })).toEqual({
      outcome: 'complete',
      scripts: ten,
      durationMs: 0,
    });
    expect(parseOutcome({ outcome: 'complete', scripts: [], durationMs: 3_600_000 })?.durationMs).toBe(3_600_000);
  });

  it('reads a well-formed outcome, rounding the duration', () => {
    expect(parseOutcome({ outcome: 'complete', scripts: [], durationMs: 12.6 })).toEqual({
      outcome: 'complete',
      scripts: [],
      durationMs: 13,
    });
    expect(parseOutcome({ ...OUTCOME, extra: 'dropped' })).toEqual(OUTCOME);
  });

  it.each([
    ['nothing', undefined],
    ['an array', [OUTCOME]],
    ['an unknown kind', { ...OUTCOME, outcome: 'great' }],
    ['scripts that are no array', { ...OUTCOME, scripts: 'fp_static_wdp' }],
    ['a script name of neither party', { ...OUTCOME, scripts: ['evil_wdp'] }],
    ['a script name with markup', { ...OUTCOME, scripts: ['fp_<img>'] }],
    ['a script name with markup after a good start', { ...OUTCOME, scripts: ['fp_static_wdp<img>'] }],
    ['a script name with something before the party', { ...OUTCOME, scripts: ['evil fp_static_wdp'] }],
    ['a script name that is an array', { ...OUTCOME, scripts: [['fp_static_wdp']] }],
    ['a string', 'complete'],
    ['null', null],
    ['eleven scripts', { ...OUTCOME, scripts: Array(11).fill('fp_static_wdp') }],
    ['a negative duration', { ...OUTCOME, durationMs: -1 }],
    ['a duration over an hour', { ...OUTCOME, durationMs: 3_600_001 }],
    ['a duration that is a string', { ...OUTCOME, durationMs: '5' }],
  ])('drops %s', (_, value) => {
    expect(parseOutcome(value)).toBeUndefined();
  });
});

describe('the endpoint and outcomes', () => {
  it('an outcome alone is recorded and answered 202, with no call to the service; its retry is told once', async () => {
    const { handler, told } = await setup();
    for (let i = 0; i < 2; i++) {
      const response = await handler(
        post({ outcome: { ...OUTCOME, outcome: 'collection_failed' } }, 'key-report-0001'),
      );
      expect([response.status, await response.json()]).toEqual([202, { recorded: true }]);
    }
    expect(told).toEqual([{ ...OUTCOME, outcome: 'collection_failed' }]);
    expect(emulator.inspect.requests('token')).toBe(0);
    expect(await valueOf('blackbox_capture.capture.outcomes', { outcome: 'collection_failed', engine: 'other' })).toBe(
      1,
    );
  });

  it('an outcome is counted under the engine of the browser that reported it (its User-Agent)', async () => {
    const { handler } = await setup();
    const request = post({ outcome: { ...OUTCOME, outcome: 'timeout-partial' } }, 'key-report-0002');
    request.headers.set(
      'user-agent',
      'Mozilla/5.0 (Macintosh) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15',
    );
    expect((await handler(request)).status).toBe(202);
    expect(await valueOf('blackbox_capture.capture.outcomes', { outcome: 'timeout-partial', engine: 'webkit' })).toBe(
      1,
    );
  });

  it('an outcome with the blackbox is told once per Idempotency-Key, however often the browser retries', async () => {
    const { handler, told } = await setup();
    const before = await valueOf('blackbox_capture.capture.outcomes', {
      outcome: 'degraded-first-party',
      engine: 'other',
    });
    for (let i = 0; i < 3; i++)
      expect((await handler(post({ blackbox: BLACKBOX, outcome: OUTCOME }))).status).toBe(200);
    expect(told).toEqual([OUTCOME]);
    expect(
      await valueOf('blackbox_capture.capture.outcomes', { outcome: 'degraded-first-party', engine: 'other' }),
    ).toBe((before as number) + 1);
    const duration = (await points('blackbox_capture.capture.duration')).find(
      (p) => p.attributes.outcome === 'degraded-first-party',
    )!.value as { count: number; sum: number };
    expect(duration.count).toBeGreaterThanOrEqual(1);
    expect(duration.sum).toBeGreaterThanOrEqual(2150);
  });

  it('without an Idempotency-Key each request is told', async () => {
    const { handler, told } = await setup();
    await handler(post({ blackbox: BLACKBOX, outcome: OUTCOME }, null));
    await handler(post({ blackbox: blackboxOf('second'), outcome: OUTCOME }, null));
    expect(told).toHaveLength(2);
  });

  it('a malformed outcome is dropped; the blackbox beside it is checked as ever', async () => {
    const { handler, told } = await setup();
    expect((await handler(post({ blackbox: BLACKBOX, outcome: { outcome: 'great' } }))).status).toBe(200);
    expect(told).toEqual([]);
    expect((await handler(post({ outcome: { outcome: 'great' } }, 'key-report-0002'))).status).toBe(400);
  });

  it('an onOutcome that throws goes to onError; the check goes on', async () => {
    const errors: unknown[] = [];
    const { handler } = await setup({
      onOutcome: () => {
        throw new Error('hook bug');
      },
      onError: (e) => errors.push(e),
    });
    expect((await handler(post({ blackbox: BLACKBOX, outcome: OUTCOME }))).status).toBe(200);
    expect(errors).toEqual([new Error('hook bug')]);
  });

  it.each([
    [204, 'ok'],
    [399, 'ok'],
    [400, 'http_4xx'],
    [428, 'http_4xx'],
    [429, 'http_429'],
    [499, 'http_4xx'],
    [500, 'http_5xx'],
    [503, 'http_5xx'],
    ['network_error', 'network_error'],
  ] as const)('an upstream answer %s counts as %s', async (status, result) => {
    // One of the operations' closed list (names.ts's UPSTREAM_OPERATIONS), counted on from where it stood.
    const labels = { operation: 'details', result };
    const before = await valueOf('blackbox_capture.upstream.calls', labels);
    recordUpstream('details', status);
    expect(await valueOf('blackbox_capture.upstream.calls', labels)).toBe((before as number) + 1);
  });

  it('upstream calls are counted by operation and result, and repairs by kind', async () => {
    const { handler } = await setup();
    const ok = (operation: string) => valueOf('blackbox_capture.upstream.calls', { operation, result: 'ok' });
    const before = {
      create: await ok('account create'),
      upload: await ok('upload'),
      token: await ok('token'),
      repairs: await valueOf('blackbox_capture.blackbox.repairs', { repair: 'spaces_for_plus' }),
    };
    emulator.faults.fail('upload', { times: 1, status: 503 });
    expect((await handler(post({ blackbox: BLACKBOX.replaceAll('+', ' ') }, 'key-upstream-01'))).status).toBe(503);
    expect((await handler(post({ blackbox: BLACKBOX.replaceAll('+', ' ') }, 'key-upstream-01'))).status).toBe(200);
    expect(await ok('account create')).toBe((before.create as number) + 1);
    expect(await ok('upload')).toBe((before.upload as number) + 1);
    expect(
      await valueOf('blackbox_capture.upstream.calls', { operation: 'upload', result: 'http_5xx' }),
    ).toBeGreaterThanOrEqual(1);
    expect(await ok('token')).toBe((before.token as number) + 1);
    expect(await valueOf('blackbox_capture.blackbox.repairs', { repair: 'spaces_for_plus' })).toBe(
      (before.repairs as number) + 2,
    );
  });
});
