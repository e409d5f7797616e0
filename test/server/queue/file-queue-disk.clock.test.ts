// The handler's default queue on a full disk (src/server/sqlite/database.ts): its data
// directory on a real 512 KiB tmpfs, the service unreachable so that every checkout stays
// queued. Past the room, a checkout is refused 503 store_full and nothing pretends to hold it:
// the browser's retry with the same Idempotency-Key is refused too, never a 202 for nothing.
// Once there is room (the tmpfs made larger), the same process takes the refused ones (no
// restart); SIGKILLed on a full disk, then restarted on it with the service back, the new
// process starts, and once there is room again checks every checkout the first answered 202, each once. Mounting needs root: without it, skipped and said.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';

const support = (name: string) => fileURLToPath(new URL(`../../support/${name}`, import.meta.url));

/** A 512 KiB tmpfs of the test's own, or why there is none (mounting needs root). */
function mountSmallDisk(): { dir?: string; reason?: string } {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-full-disk-'));
  if (process.getuid?.() !== 0) return { reason: 'mounting a tmpfs needs root' };
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=512k', 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status !== 0)
    return { reason: `mount -t tmpfs failed: ${(mounted.stderr || mounted.error?.message) ?? ''}` };
  return { dir };
}
const disk = mountSmallDisk();
afterAll(() => {
  if (!disk.dir) return;
  // Lazily if something outside this file still holds it: the folder is then free to remove.
  if (spawnSync('umount', [disk.dir]).status !== 0) spawnSync('umount', ['--lazy', disk.dir]);
  rmSync(disk.dir, { recursive: true, force: true });
});

/** A child instance (test/support/file-queue-instance.mjs) on `dataDir`; its stdout lines as they come. */
function instance(config: object, dataDir: string) {
  const child = spawn(process.execPath, [support('file-queue-instance.mjs'), JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BLACKBOX_CAPTURE_DATA_DIR: dataDir },
  });
  const lines: string[] = [];
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop()!;
    lines.push(...parts);
  });
  return { child, lines };
}

const children: ChildProcess[] = [];
let emulator: Emulator | undefined;
afterEach(async () => {
  // Each child gone before the next test, and before the disk is unmounted: a process still
  // holding its database open keeps the tmpfs busy (umount: EBUSY).
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = once(child, 'exit');
      child.kill('SIGKILL');
      await gone;
    }),
  );
  await emulator?.close();
});

const ordersOf = (lines: string[], prefix: string) =>
  lines.filter((l) => l.startsWith(prefix)).map((l) => l.split(' ')[1]!);
const count = (lines: string[], line: string) => lines.filter((l) => l === line).length;
/** Writes `path` until the disk refuses (ENOSPC): no room is left on it. */
function fill(path: string): void {
  const fd = openSync(path, 'w');
  try {
    for (;;) writeSync(fd, Buffer.alloc(4096, 1));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

describe.skipIf(!disk.dir)(`the default queue on a full disk${disk.reason ? ` (skipped: ${disk.reason})` : ''}`, () => {
  it('refuses past the room (and the same key again), keeps every 202 through SIGKILL, and takes more once there is room', async () => {
    emulator = await startEmulator();
    const dataDir = join(disk.dir!, 'data');
    mkdirSync(dataDir);
    const token = { clientId: emulator.clientId, clientSecret: emulator.clientSecret, tokenUrl: emulator.tokenUrl };
    const dead = 'http://127.0.0.1:9';
    // The service unreachable: nothing is checked, every checkout stays queued.
    const away = {
      token: { ...token, tokenUrl: `${dead}/token` },
      serviceUrls: { baseUrl: dead, apiBaseUrl: dead, retrievalBaseUrl: dead },
    };
    const first = instance({ ...away, post: 40 }, dataDir);
    children.push(first.child);
    await expect.poll(() => first.lines.includes('posted'), { timeout: 30_000 }).toBe(true);
    const accepted = ordersOf(first.lines, 'accepted');
    const refused = ordersOf(first.lines, 'refused');
    expect(accepted.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    expect(first.lines.filter((l) => l.startsWith('refused') && !l.endsWith(' 503 store_full'))).toEqual([]);
    // Whatever room is left, taken: the disk stays full whatever SQLite frees meanwhile.
    fill(join(disk.dir!, 'filler'));
    // The browser's retries, same keys, the disk full: refused again, never answered from memory.
    first.child.kill('SIGUSR2');
    await expect.poll(() => count(first.lines, 'reposted'), { timeout: 30_000 }).toBe(1);
    expect(first.lines.filter((l) => l.startsWith('accepted'))).toHaveLength(accepted.length);
    // Room again (the tmpfs made larger), and no restart: the same process takes them.
    expect(spawnSync('mount', ['-o', 'remount,size=16m', disk.dir!]).status).toBe(0);
    first.child.kill('SIGUSR2');
    await expect.poll(() => count(first.lines, 'reposted'), { timeout: 30_000 }).toBe(2);
    const acceptedLater = ordersOf(first.lines.slice(first.lines.indexOf('reposted')), 'accepted');
    expect(acceptedLater.sort()).toEqual([...refused].sort());
    // Full again, and SIGKILLed: restarted on the full disk, the service back.
    fill(join(disk.dir!, 'filler-2'));
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    const second = instance({ token, serviceUrls: emulator.serviceUrls }, dataDir);
    children.push(second.child);
    await expect.poll(() => second.lines.includes('posted'), { timeout: 30_000 }).toBe(true);
    // It starts (the file is not refused for its life) and tells the full disk; room again, it goes on by itself.
    await expect
      .poll(() => second.lines.filter((l) => l.startsWith('error store_full')).length, { timeout: 30_000 })
      .toBeGreaterThan(0);
    expect(second.lines.filter((l) => l.startsWith('error invalid_configuration'))).toEqual([]);
    rmSync(join(disk.dir!, 'filler-2'));
    const finalized = () =>
      emulator!.inspect
        .transactions()
        .filter((t) => t.blackboxes.length > 0)
        .map((t) => t.customerInternalReference);
    const all = [...accepted, ...acceptedLater].sort();
    await expect.poll(() => [...new Set(finalized())].sort(), { timeout: 60_000 }).toEqual(all);
    // Each once: no checkout made twice by the two processes.
    expect(finalized().sort()).toEqual(all);
  }, 120_000);
});
