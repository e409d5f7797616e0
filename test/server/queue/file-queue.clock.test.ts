// A single instance on the file queue, SIGKILLed mid-backlog: a new process on the same path
// checks what the first accepted and did not finish. Every accepted checkout reaches the
// service; only the one the first process was running (concurrency 1) may be made twice.
// The same for the handler's default queue (no queue option: a file queue in its data
// directory), SIGKILLed or SIGTERMed (close() keeps the rest on disk, none told not_checked),
// and two processes on one directory (an overlapping deploy): every checkout either accepted
// checked, none twice.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';

/** The data directory's one file (src/server/queue/default.ts). */
const DATA_FILE = 'blackbox-capture.sqlite';
const support = (name: string) => fileURLToPath(new URL(`../../support/${name}`, import.meta.url));

/** A child instance; its stdout lines as they come. */
function instance(config: object, dataDir?: string) {
  const child = spawn(process.execPath, [support('file-queue-instance.mjs'), JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...(dataDir ? { BLACKBOX_CAPTURE_DATA_DIR: dataDir } : {}) },
  });
  const lines: string[] = [];
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const text = rest + chunk.toString();
    const parts = text.split('\n');
    rest = parts.pop()!;
    lines.push(...parts);
  });
  return { child, lines };
}

async function until(condition: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A folder beside the test's data directory, removed with it (test/support/data-dir-setup.ts). */
const scratch = (prefix: string) => mkdtempSync(join(dirname(process.env.BLACKBOX_CAPTURE_DATA_DIR!), prefix));

const children: ChildProcess[] = [];
let emulator: Emulator | undefined;
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await emulator?.close();
});

/** The orders whose transactions got a blackbox on this test's emulator. */
const finalized = () =>
  new Set(
    emulator!.inspect
      .transactions()
      .filter((t) => t.blackboxes.length > 0)
      .map((t) => t.customerInternalReference),
  );

describe('the file queue outlives its process', () => {
  it('SIGKILL mid-backlog: the next process on the path checks every checkout accepted and not yet checked', async () => {
    // 4 account creates a second at the service and at the client: a backlog that takes seconds to drain.
    emulator = await startEmulator({ accountRequestsPerSecond: 4 });
    const path = join(scratch('kill-'), 'data.sqlite');
    const config = {
      path,
      token: { clientId: emulator.clientId, clientSecret: emulator.clientSecret, tokenUrl: emulator.tokenUrl },
      serviceUrls: emulator.serviceUrls,
    };
    const orders = 12;
    const first = instance({ ...config, post: orders });
    children.push(first.child);
    await until(() => first.lines.includes('posted'), 30_000);
    expect(first.lines.filter((l) => l.startsWith('accepted'))).toHaveLength(orders);
    await until(() => emulator!.inspect.transactions().length >= 3, 30_000);
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    const madeBefore = emulator.inspect.transactions().length;
    expect(madeBefore).toBeLessThan(orders);

    const second = instance(config);
    children.push(second.child);
    await until(() => finalized().size === orders, 45_000);
    await new Promise((r) => setTimeout(r, 500));
    const made = emulator.inspect.transactions().map((t) => t.customerInternalReference);
    const twice = made.filter((order, i) => made.indexOf(order) !== i);
    // Every order checked; at most the one the killed process was running made again.
    expect(finalized()).toEqual(new Set(Array.from({ length: orders }, (_, i) => `order-${i}`)));
    expect(twice.length).toBeLessThanOrEqual(1);
    expect(second.lines.filter((l) => l.startsWith('error'))).toEqual([]);
  }, 60_000);
});

describe("the handler's default queue outlives its process (no queue option)", () => {
  /** An emulator at 4 account creates a second, and the instances' configuration on it. */
  async function setUp() {
    emulator = await startEmulator({ accountRequestsPerSecond: 4 });
    return {
      dir: scratch('default-'),
      config: {
        token: { clientId: emulator.clientId, clientSecret: emulator.clientSecret, tokenUrl: emulator.tokenUrl },
        serviceUrls: emulator.serviceUrls,
      },
    };
  }
  const orders = (from: number, n: number) => new Set(Array.from({ length: n }, (_, i) => `order-${from + i}`));
  const started = (lines: string[]) => lines.some((l) => l.includes('accepted checkouts are kept in'));

  it.each(['SIGKILL', 'SIGTERM'] as const)(
    '%s mid-backlog: the next process on the directory checks every checkout accepted',
    async (signal) => {
      const { dir, config } = await setUp();
      const first = instance({ ...config, post: 16 }, dir);
      children.push(first.child);
      await until(() => first.lines.includes('posted'), 30_000);
      expect(first.lines.filter((l) => l.startsWith('accepted'))).toHaveLength(16);
      expect(first.lines.filter((l) => started([l]))).toEqual([expect.stringContaining(join(dir, DATA_FILE))]);
      await until(() => emulator!.inspect.transactions().length >= 3, 30_000);
      first.child.kill(signal);
      await new Promise((r) => first.child.once('exit', r));
      expect(finalized().size).toBeLessThan(16);
      // SIGTERM: close() let the running checks finish and kept the rest on disk, told nowhere as lost.
      if (signal === 'SIGTERM') expect(first.lines.at(-1)).toBe('closed');
      expect(first.lines.filter((l) => l.startsWith('error'))).toEqual([]);

      const second = instance(config, dir);
      children.push(second.child);
      await until(() => finalized().size === 16, 45_000);
      expect(finalized()).toEqual(orders(0, 16));
      // Each check resumes from its key's record in the file. A SIGKILL may cut off account
      // creates on the wire (4 checks at once): each such key waits out its create, then creates
      // again and reports the transaction it may have left (orphaned_transaction), never silent.
      const errors = second.lines.filter((l) => l.startsWith('error'));
      if (signal === 'SIGTERM') expect(errors).toEqual([]);
      else {
        expect(errors.every((l) => l.startsWith('error orphaned_transaction '))).toBe(true);
        expect(errors.length).toBeLessThanOrEqual(4);
      }
      // A second transaction only where one was reported (a create the service may not have made is reported too).
      const made = emulator!.inspect.transactions().map((t) => t.customerInternalReference);
      expect(made.length - new Set(made).size).toBeLessThanOrEqual(errors.length);
    },
    60_000,
  );

  it('two processes on one directory (an overlapping deploy): each checkout accepted by either is checked once', async () => {
    const { dir, config } = await setUp();
    const first = instance({ ...config, post: 8 }, dir);
    children.push(first.child);
    await until(() => first.lines.includes('posted'), 30_000);
    // The new process starts before the old one stops, and takes checkouts of its own.
    const second = instance({ ...config, post: 8, from: 100 }, dir);
    children.push(second.child);
    await until(() => second.lines.includes('posted'), 30_000);
    expect([...first.lines, ...second.lines].filter((l) => l.startsWith('accepted'))).toHaveLength(16);
    first.child.kill('SIGTERM');
    await new Promise((r) => first.child.once('exit', r));
    await until(() => finalized().size === 16, 45_000);
    expect(finalized()).toEqual(new Set([...orders(0, 8), ...orders(100, 8)]));
    // Each order made once: no job run by both.
    const made = emulator!.inspect.transactions().map((t) => t.customerInternalReference);
    expect(made.filter((order, i) => made.indexOf(order) !== i)).toEqual([]);
    expect([...first.lines, ...second.lines].filter((l) => l.startsWith('error'))).toEqual([]);
  }, 60_000);
});
