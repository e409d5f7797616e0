// The endpoint's settings module: every option of createDeviceRiskHandler has a row, and each
// row refuses a bad value when the handler is made, with invalid_configuration naming it.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createDeviceRiskHandler } from '../../../src/server/endpoint/handler.js';
import { ENDPOINT_OPTIONS, endpointSettings } from '../../../src/server/endpoint/settings.js';
import { createMemoryQueue } from '../../../src/server/queue/queue.js';
import { REQUIRED } from '../../../src/server/options-table.js';
import type { DeviceRiskHandlerOptions } from '../../../src/server/endpoint/handler.js';

const base = (): DeviceRiskHandlerOptions =>
  ({
    client: { clientId: 'c' },
    allowedOrigins: ['https://shop.example'],
    resolveCustomer: () => ({ customerInternalReference: 'x' }),
    answer: 'checked',
  }) as never;

/** A value each option must refuse: of the wrong kind, or out of its range. */
const BAD: Record<keyof typeof ENDPOINT_OPTIONS, unknown> = {
  client: 'client',
  allowedOrigins: ['not a url'],
  resolveCustomer: 'resolve',
  workflowKey: {},
  callbackUrl: '',
  maxBodyBytes: 1.5,
  reportStatus: 'yes',
  answer: 'later',
  queue: { add() {} },
  dataDir: 42,
  maxQueuedChecks: 0,
  maxQueuedMs: -1,
  instanceId: '',
  store: new Map(),
  storeTimeoutMs: Number.NaN,
  idempotencyTtlMs: '1 day',
  idempotencyMaxKeys: -5,
  idempotencyLeaseMs: 0,
  idempotencyWaitMs: -1,
  onError: true,
  nonceSecret: 'short',
  nonceSubject: 'subject',
  onRepair: 1,
  onOutcome: 1,
  checkoutsPerAddress: { burst: 0, perMinute: 6 },
  addressPrefix: 'wide',
  visitor: 'session',
  checkoutsPerCustomer: true,
  maxOutcomeReportsPerSecond: Infinity,
  onResult: {},
  onResultTimeoutMs: 0,
  resultWaitMs: -1,
  now: 0,
};

describe('ENDPOINT_OPTIONS', () => {
  it.each(Object.keys(BAD) as (keyof typeof BAD)[])('refuses a bad %s when the handler is made, naming it', (name) => {
    const options = { ...base(), [name]: BAD[name] };
    expect(() => createDeviceRiskHandler(options)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(`${name} must be`) }),
    );
  });

  it.each(Object.entries(ENDPOINT_OPTIONS).filter(([, row]) => row.default === REQUIRED))(
    'refuses a handler without %s',
    (name) => {
      const options = base() as unknown as Record<string, unknown>;
      delete options[name];
      expect(() => createDeviceRiskHandler(options as never)).toThrow(
        expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(name) }),
      );
    },
  );

  it('refuses options that are no object', () => {
    expect(() => createDeviceRiskHandler(undefined as never)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
  });

  it('takes good values of every kind', () => {
    const queue = createMemoryQueue();
    const options: DeviceRiskHandlerOptions = {
      ...base(),
      answer: 'accepted',
      queue,
      workflowKey: 10011,
      maxBodyBytes: 4096,
      reportStatus: false,
      checkoutsPerAddress: false,
      checkoutsPerCustomer: { burst: 1, perMinute: 1 },
      addressPrefix: { ipv4: 24 },
      idempotencyWaitMs: 0,
      resultWaitMs: 0,
      nonceSecret: 's'.repeat(32),
      onError: () => {},
    };
    const handler = createDeviceRiskHandler(options);
    expect(typeof handler).toBe('function');
    return handler.close();
  });

  it('fills the defaults from the table', () => {
    const settings = endpointSettings(base());
    expect(settings).toMatchObject({
      maxBodyBytes: ENDPOINT_OPTIONS.maxBodyBytes.default,
      leaseMs: 10_000,
      recordTtlMs: 86_400_000,
      waitMs: 5_000,
      maxQueuedMs: 900_000,
      answer: 'checked',
      checkoutsPerAddress: { burst: 5, perMinute: 6 },
      checkoutsPerCustomer: { burst: 5, perMinute: 6 },
      storeTimeoutMs: ENDPOINT_OPTIONS.storeTimeoutMs.default,
      idempotencyMaxKeys: 100_000,
      maxOutcomeReportsPerSecond: 20,
      resultWaitMs: 0,
      onResultTimeoutMs: 30_000,
    });
    expect([...settings.allowed]).toEqual(['https://shop.example']);
    expect(endpointSettings({ ...base(), checkoutsPerAddress: false, resultWaitMs: 50 })).toMatchObject({
      checkoutsPerAddress: false,
      resultWaitMs: 50,
    });
  });

  it('is the one place the defaults are read: the handler reads its settings, never the table', () => {
    // One resolution (endpointSettings), so that a default changes in its row and nowhere else.
    const handler = readFileSync(new URL('../../../src/server/endpoint/handler.ts', import.meta.url), 'utf8');
    expect(handler).not.toMatch(/ENDPOINT_OPTIONS/);
  });
});
