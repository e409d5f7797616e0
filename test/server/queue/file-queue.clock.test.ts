// A single instance on the file queue, SIGKILLed mid-backlog: a new process on the same path
// checks what the first accepted and did not finish. Every accepted checkout reaches the
// service; only the one the first process was running (concurrency 1) may be made twice.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';

const support = (name: string) => fileURLToPath(new URL(`../../support/${name}`, import.meta.url));

/** A child instance; its stdout lines as they come. */
function instance(config: object) {
  const child = spawn(process.execPath, [support('file-queue-instance.mjs'), JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
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

const children: ChildProcess[] = [];
let emulator: Emulator | undefined;
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await emulator?.close();
});

describe('the file queue outlives its process', () => {
  it('SIGKILL mid-backlog: the next process on the path checks every checkout accepted and not yet checked', async () => {
    // 4 account creates a second at the service and at the client: a backlog that takes seconds to drain.
    emulator = await startEmulator({ accountRequestsPerSecond: 4 });
    const path = join(mkdtempSync(join(tmpdir(), 'bbc-file-queue-kill-')), 'queue.jsonl');
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
    const finalized = () =>
      new Set(
        emulator!.inspect
          .transactions()
          .filter((t) => t.blackboxes.length > 0)
          .map((t) => t.customerInternalReference),
      );
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
