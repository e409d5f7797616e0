// The queues' settings: each option refused when the queue is made, naming it and what it must
// be; the defaults are the table's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBullmqQueue, DEFAULT_BULLMQ_MAX_QUEUED } from '../../../src/server/queue/bullmq.js';
import { createFileQueue } from '../../../src/server/queue/file.js';
import { createMemoryQueue } from '../../../src/server/queue/queue.js';
import { BULLMQ_QUEUE_OPTIONS, FILE_QUEUE_OPTIONS, MEMORY_QUEUE_OPTIONS } from '../../../src/server/queue/settings.js';

/** The refusal of `name`, with the end of its message. */
const refusal = (name: string, expects: string) =>
  expect.objectContaining({
    code: 'invalid_configuration',
    message: expect.stringContaining(`${name} must be ${expects}`),
  });

const job = (key: string) => ({
  key,
  fingerprint: 'f',
  blackbox: 'b',
  customer: { customerInternalReference: 'c' },
  acceptedAt: 0,
});

describe('MEMORY_QUEUE_OPTIONS', () => {
  it.each<[keyof typeof MEMORY_QUEUE_OPTIONS, unknown]>([
    ['maxQueued', 0],
    ['concurrency', 2.5],
    ['now', 'now'],
  ])('a bad %s is invalid_configuration naming it', (name, value) => {
    expect(() => createMemoryQueue({ [name]: value })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining(`${name} must be`) }),
    );
  });

  it('takes its defaults from the table', async () => {
    const queue = createMemoryQueue({ maxQueued: 1 });
    expect(await queue.add(job('a'))).toBe('added');
    expect(await queue.add(job('b'))).toBe('full');
    expect(MEMORY_QUEUE_OPTIONS.maxQueued.default).toBe(10_000);
    await queue.close();
  });
});

describe('FILE_QUEUE_OPTIONS', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-file-queue-settings-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each<[keyof typeof FILE_QUEUE_OPTIONS, unknown, string]>([
    ['path', undefined, 'a non-empty string'],
    ['path', '', 'a non-empty string'],
    ['maxQueued', -1, 'a positive whole number'],
    ['concurrency', 0, 'a positive whole number'],
    ['now', 1, 'a function'],
    ['leaseMs', 0, 'a positive number of milliseconds'],
    ['onError', 'log', 'a function'],
  ])('%s %s is refused at creation, named', (name, value, expects) => {
    expect(() => createFileQueue({ path: join(dir, `${name}.sqlite`), [name]: value } as never)).toThrow(
      refusal(name, expects),
    );
  });

  it('is the memory queue with its SQLite file: the same defaults', async () => {
    expect(FILE_QUEUE_OPTIONS.maxQueued).toBe(MEMORY_QUEUE_OPTIONS.maxQueued);
    const queue = createFileQueue({ path: join(dir, 'one.sqlite'), maxQueued: 1 });
    expect(await queue.add(job('a'))).toBe('added');
    expect(await queue.add(job('b'))).toBe('full');
    await queue.close();
  });
});

describe('BULLMQ_QUEUE_OPTIONS', () => {
  // Refused before BullMQ is given anything: no Redis is reached.
  const connection = { host: '127.0.0.1', port: 1, lazyConnect: true };
  it.each<[keyof typeof BULLMQ_QUEUE_OPTIONS, unknown, string]>([
    ['connection', undefined, 'ioredis options or an ioredis client'],
    ['connection', 'redis://x', 'ioredis options or an ioredis client'],
    ['name', '', 'a non-empty string'],
    ['prefix', '', 'a non-empty string'],
    ['maxQueued', 0, 'a positive whole number'],
    ['concurrency', 1.5, 'a positive whole number'],
    ['stalledIntervalMs', 0, 'a positive number of milliseconds'],
    ['lockDurationMs', Number.POSITIVE_INFINITY, 'a positive number of milliseconds'],
    ['onError', 'log', 'a function'],
  ])('%s %s is refused at creation, named', (name, value, expects) => {
    expect(() => createBullmqQueue({ connection, [name]: value } as never)).toThrow(refusal(name, expects));
  });

  it("defaults to 900 held (the trust bound at the tenant's default limit) and BullMQ's own", () => {
    expect(DEFAULT_BULLMQ_MAX_QUEUED).toBe(900);
    expect(BULLMQ_QUEUE_OPTIONS.name.default).toBe('blackbox-capture-checks');
    expect(BULLMQ_QUEUE_OPTIONS.prefix.default).toBe('bull');
    expect([BULLMQ_QUEUE_OPTIONS.stalledIntervalMs.default, BULLMQ_QUEUE_OPTIONS.lockDurationMs.default]).toEqual([
      30_000, 30_000,
    ]);
  });
});
