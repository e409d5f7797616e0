// The queue of a handler given none (src/server/queue/default.ts, data-dir.ts), on a stub
// client: a file queue in its data directory, said once at start; close() leaves what it did
// not start on disk, never `not_checked`, and the next handler on the directory checks it; two
// handlers on one directory share its file. A directory that cannot be used (not writable) or
// a damaged file is told at start and refuses each checkout 503 invalid_configuration: never a
// silent fall-back to memory. In the
// edge build (no file system) the default is memory, warned at start, and close tells what it loses.
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { createDeviceRiskHandler, createMemoryQueue } from '../../../src/server/index.js';
import type { DeviceRiskClient, DeviceRiskHandlerOptions } from '../../../src/server/index.js';
import { orderedClient } from '../../support/stub-client.js';
import { checkoutFor, orderTellingHandler } from '../../support/kit.js';
import { rowsOf } from '../../support/sqlite.js';
import { createDefaultQueue } from '../../../src/server/queue/default.js';

let info: MockInstance;
let warn: MockInstance;
const said = (spy: MockInstance) => spy.mock.calls.map((args) => args.join(' '));
beforeEach(() => {
  info = vi.spyOn(console, 'info').mockImplementation(() => {});
  warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
});
afterEach(() => vi.restoreAllMocks());

const dataDir = () => process.env.BLACKBOX_CAPTURE_DATA_DIR!;
/** A folder of this test's own beside its data directory, removed with it (test/support/data-dir-setup.ts). */
const scratch = (prefix: string) => mkdtempSync(join(dirname(dataDir()), prefix));

function handlerOf(
  client: DeviceRiskClient,
  extra: Partial<DeviceRiskHandlerOptions> = {},
  create = createDeviceRiskHandler,
) {
  const errors: Array<{ code?: string; message: string }> = [];
  const decided: string[] = [];
  const handler = orderTellingHandler({ client, ...extra }, errors, decided, create);
  return { handler, errors, decided };
}

/** The orders the data file holds, as another process reads them. */
function heldIn(path: string): string[] {
  return rowsOf(path, 'SELECT job FROM queue_jobs WHERE done_at IS NULL').map(
    (row) =>
      (JSON.parse(String(row.job)) as { customer: { customerInternalReference: string } }).customer
        .customerInternalReference,
  );
}
const DATA_FILE = 'blackbox-capture.sqlite';

/** Resolves once `condition` holds (polled). */
const until = (condition: () => boolean) => vi.waitFor(() => expect(condition()).toBe(true), { timeout: 5_000 });

describe('the default queue: a file queue in the data directory', () => {
  it("passes the late check's lateAt on: full at it, held without it", async () => {
    const queue = createDefaultQueue({
      dataDir: scratch('bbc-late-at-'),
      maxQueued: 100,
      now: Date.now,
      onError: () => {},
    });
    const job = {
      key: 'key-late',
      fingerprint: 'f',
      blackbox: 'bb',
      customer: { customerInternalReference: 'order-late' },
      acceptedAt: 0,
    };
    expect(await queue.add(job, 0)).toBe('full');
    expect(await queue.add(job)).toBe('added');
    await queue.close();
  });

  it('said once at start with its file; close() keeps what it did not start on disk, told nowhere as lost; the next handler checks it', async () => {
    const first = orderedClient();
    const release = first.hold();
    const one = handlerOf(first.client);
    const keys = ['order-00001', 'order-00002', 'order-00003', 'order-00004', 'order-00005', 'order-00006'];
    for (const key of keys) expect((await one.handler(checkoutFor(key))).status).toBe(202);
    const file = join(dataDir(), DATA_FILE);
    expect(said(info)).toEqual([expect.stringContaining(`accepted checkouts are kept in ${file} until checked`)]);
    expect(said(warn)).toEqual([]);
    // The default queue runs 4 at once: 4 held at the service's door, 2 waiting.
    const closing = one.handler.close();
    release();
    await closing;
    expect(one.decided).toHaveLength(4);
    expect(one.errors).toEqual([]);
    expect(heldIn(file)).toContain('order-00006');

    const next = handlerOf(orderedClient().client);
    await until(() => next.decided.length === 2);
    expect(next.decided.sort()).toEqual(keys.filter((key) => !one.decided.includes(key)).sort());
    expect(next.errors).toEqual([]);
    await next.handler.close();
    expect(said(info)).toHaveLength(2);
  });

  it("keeps its keys in the file on the handler's clock: a blackbox's claim ends with maxQueuedMs of it", async () => {
    let time = Date.now();
    const { handler } = handlerOf(orderedClient().client, { now: () => time, maxQueuedMs: 60_000 });
    expect((await handler(checkoutFor('key-clock-1', { order: 'order-clock' }))).status).toBe(202);
    // Its blackbox under another key: refused within the trust bound, taken past it.
    expect((await handler(checkoutFor('key-clock-2', { order: 'order-clock' }))).status).toBe(422);
    time += 60_001;
    expect((await handler(checkoutFor('key-clock-3', { order: 'order-clock' }))).status).toBe(202);
    await handler.close();
  });

  it('dataDir over BLACKBOX_CAPTURE_DATA_DIR; a directory missing is made', async () => {
    const dir = join(scratch('option-'), 'made', 'here');
    const { handler, decided } = handlerOf(orderedClient().client, { dataDir: dir });
    expect((await handler(checkoutFor('order-dir01'))).status).toBe(202);
    expect(said(info)).toEqual([expect.stringContaining(`kept in ${join(dir, DATA_FILE)}`)]);
    await until(() => decided.length === 1);
    await handler.close();
    expect(existsSync(join(dataDir(), DATA_FILE))).toBe(false);
  });

  it('a second handler on the directory shares its file: a checkout accepted by one is checked once, its key held for both', async () => {
    const first = handlerOf(orderedClient().client);
    await first.handler.backlog();
    const second = handlerOf(orderedClient().client);
    expect((await second.handler(checkoutFor('order-twice1'))).status).toBe(202);
    // The browser's retry reaches the other: the same checkout, held already (202) or checked
    // already (200, the key's record in the same file), not queued again.
    expect([200, 202]).toContain((await first.handler(checkoutFor('order-twice1'))).status);
    await until(() => first.decided.length + second.decided.length === 1);
    // Checked: the key's record, in the same file, answers it on either.
    expect((await first.handler(checkoutFor('order-twice1'))).status).toBe(200);
    await second.handler.close();
    await first.handler.close();
    expect([...first.decided, ...second.decided]).toEqual(['order-twice1']);
    expect([...first.errors, ...second.errors]).toEqual([]);
    expect(said(warn)).toEqual([]);
  });

  it('a damaged file: told at start naming it and what to do; each checkout 503 invalid_configuration', async () => {
    mkdirSync(dataDir(), { recursive: true });
    writeFileSync(join(dataDir(), DATA_FILE), 'not a database, a file damaged by hand'.repeat(100));
    const { handler, errors } = handlerOf(orderedClient().client);
    const answer = await handler(checkoutFor('order-broken'));
    expect(answer.status).toBe(503);
    expect(await answer.json()).toMatchObject({ error: { code: 'invalid_configuration' } });
    expect(errors[0]).toMatchObject({
      code: 'invalid_configuration',
      message: expect.stringContaining(
        `${join(dataDir(), DATA_FILE)} is damaged (file is not a database). Stop every process`,
      ),
    });
    await handler.close();
  });

  it('a directory that cannot be written: told at start naming dataDir and the fix; each checkout 503 invalid_configuration', async () => {
    const file = join(scratch('file-'), 'not-a-directory');
    writeFileSync(file, '');
    const { handler, errors } = handlerOf(orderedClient().client, { dataDir: join(file, 'queue') });
    const answer = await handler(checkoutFor('order-nodir1'));
    expect([answer.status, ((await answer.json()) as { error: { code: string } }).error.code]).toEqual([
      503,
      'invalid_configuration',
    ]);
    expect(errors[0]).toMatchObject({
      code: 'invalid_configuration',
      message: expect.stringMatching(
        new RegExp(`dataDir ${join(file, 'queue')} cannot be written \\(ENOTDIR\\).*createMemoryQueue\\(\\)`),
      ),
    });
    expect(said(info)).toEqual([]);
    expect(said(warn)).toEqual([]);
    expect(await handler.backlog()).toMatchObject({ queued: 0 });
    await handler.close();
  });

  it("an env the runtime refuses to read (Deno without --allow-env): told as the directory's, each checkout 503", async () => {
    const env = Object.getOwnPropertyDescriptor(process, 'env')!;
    Object.defineProperty(process, 'env', {
      configurable: true,
      get: () => {
        throw Object.assign(new Error('Requires env access'), { name: 'NotCapable' });
      },
    });
    let made: ReturnType<typeof handlerOf>;
    try {
      made = handlerOf(orderedClient().client);
    } finally {
      Object.defineProperty(process, 'env', env);
    }
    const answer = await made.handler(checkoutFor('order-noenv1'));
    expect(answer.status).toBe(503);
    expect(made.errors[0]).toMatchObject({
      code: 'invalid_configuration',
      message: expect.stringContaining('dataDir .blackbox-capture cannot be written (NotCapable)'),
    });
    expect(said(info)).toEqual([]);
    await made.handler.close();
  });

  it('a queue given, or the check within the request, says nothing and writes nothing', async () => {
    const { client } = orderedClient();
    const given = handlerOf(client, { queue: createMemoryQueue() });
    const checked = handlerOf(client, { answer: 'checked' });
    expect((await given.handler(checkoutFor('order-given1'))).status).toBe(202);
    expect((await checked.handler(checkoutFor('order-check1'))).status).toBe(200);
    await given.handler.close();
    await checked.handler.close();
    expect([said(info), said(warn)]).toEqual([[], []]);
    expect(existsSync(dataDir())).toBe(false);
  });
});

describe('the default queue without a file system (the edge build: data-dir.edge.ts)', () => {
  it("this process's memory, warned once at start; close() tells each checkout it held as not_checked", async () => {
    vi.resetModules();
    vi.doMock('../../../src/server/queue/data-dir.js', () => import('../../../src/server/queue/data-dir.edge.js'));
    try {
      const kit = await import('../../../src/server/index.js');
      const { client, hold } = orderedClient();
      const release = hold();
      const { handler, errors, decided } = handlerOf(client, {}, kit.createDeviceRiskHandler);
      // The default queue runs 4 at once (held at the service's door); the fifth waits.
      for (let i = 1; i <= 5; i++) expect((await handler(checkoutFor(`order-edge${i}`))).status).toBe(202);
      expect(said(warn)).toEqual([expect.stringContaining("accepted checkouts wait in this process's memory")]);
      expect(said(info)).toEqual([]);
      const closing = handler.close();
      release();
      await closing;
      expect(decided).toHaveLength(4);
      expect(errors).toEqual([
        expect.objectContaining({ code: 'not_checked', customerInternalReference: 'order-edge5' }),
      ]);
      expect(existsSync(dataDir())).toBe(false);
    } finally {
      vi.doUnmock('../../../src/server/queue/data-dir.js');
      vi.resetModules();
    }
  });
});
