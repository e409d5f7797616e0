// The status entry's settings: each option of the monitor and its two handlers refused when it
// is made, naming it and what it must be.
import { describe, expect, it } from 'vitest';
import { createMetricsHandler, createStatusHandler, createStatusMonitor } from '../../../src/server/status/index.js';
import {
  METRICS_HANDLER_OPTIONS,
  STATUS_HANDLER_OPTIONS,
  STATUS_MONITOR_OPTIONS,
} from '../../../src/server/status/settings.js';

const refusal = (name: string, expects: string) =>
  expect.objectContaining({
    code: 'invalid_configuration',
    message: expect.stringContaining(`${name} must be ${expects}`),
  });
/** A monitor in form only: the handlers check their options before they use it. */
const monitor = {} as never;

describe('STATUS_MONITOR_OPTIONS', () => {
  it.each<[keyof typeof STATUS_MONITOR_OPTIONS, unknown, string]>([
    ['store', 'redis', 'an object'],
    ['namespace', '', 'a non-empty string'],
    ['instanceId', 3, 'a non-empty string'],
    ['sampleIntervalMs', 999, 'a number of milliseconds, 1000 or more'],
    ['sampleIntervalMs', Number.POSITIVE_INFINITY, 'a number of milliseconds, 1000 or more'],
    ['sampleIntervalMs', '5000', 'a number of milliseconds, 1000 or more'],
    ['onError', true, 'a function'],
    ['now', 0, 'a function'],
  ])('%s %s is refused at creation, named', (name, value, expects) => {
    expect(() => createStatusMonitor({ [name]: value })).toThrow(refusal(name, expects));
  });

  it('takes a second as its shortest interval', async () => {
    const made = createStatusMonitor({ sampleIntervalMs: 1000 });
    await made.close();
    expect(STATUS_MONITOR_OPTIONS.sampleIntervalMs.default).toBe(10_000);
    expect(STATUS_MONITOR_OPTIONS.namespace.default).toBe('bbc:status:');
  });
});

describe('METRICS_HANDLER_OPTIONS and STATUS_HANDLER_OPTIONS', () => {
  it.each<[keyof typeof METRICS_HANDLER_OPTIONS, unknown, string]>([
    ['monitor', undefined, 'a StatusMonitor (createStatusMonitor)'],
    ['monitor', 'monitor', 'a StatusMonitor (createStatusMonitor)'],
  ])('the metrics handler: %s %s is refused', (name, value, expects) => {
    expect(() => createMetricsHandler({ [name]: value } as never)).toThrow(refusal(name, expects));
  });

  it.each<[keyof typeof STATUS_HANDLER_OPTIONS, unknown, string]>([
    ['monitor', undefined, 'a StatusMonitor (createStatusMonitor)'],
    ['instanceId', '', 'a non-empty string'],
    ['doctor', 'https://shop.test/checkout', '{ url } with the absolute URL of the checkout page the doctor checks'],
    ['doctor', { url: '/checkout' }, '{ url } with the absolute URL of the checkout page the doctor checks'],
    ['doctor', null, '{ url } with the absolute URL of the checkout page the doctor checks'],
    ['figures', [['a', 'b']], 'a function'],
  ])('the status handler: %s %j is refused', (name, value, expects) => {
    expect(() => createStatusHandler({ monitor, [name]: value } as never)).toThrow(refusal(name, expects));
  });

  it('takes a doctor with an absolute URL', () => {
    expect(() => createStatusHandler({ monitor, doctor: { url: 'https://shop.test/checkout' } })).not.toThrow();
    expect(() => createMetricsHandler({ monitor })).not.toThrow();
  });
});
