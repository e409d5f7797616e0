// Runs Debian's redis-server on a free loopback port, for the fleet tests and the fleet
// benchmark, in its own directory. It persists every write (append-only file, fsync
// always), as a production Redis holding Idempotency-Keys must: `restart()` stops it and
// starts it again on the same port with its data (the fleet tests' "Redis went away").
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.mjs';

export const REDIS_SERVER = process.env.REDIS_SERVER_PATH ?? '/usr/bin/redis-server';
export const redisAvailable = () => existsSync(REDIS_SERVER);

/** PING over a raw socket: true once the server answers PONG. */
function ping(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
    socket.on('connect', () => socket.write('PING\r\n'));
  });
}

/** Starts redis-server; resolves once it answers PING. Throws when it cannot. */
export async function startRedis() {
  const dir = mkdtempSync(join(tmpdir(), 'bbc-redis-'));
  const port = await freePort();
  let child;
  let exited;
  async function start() {
    child = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--dir',
        dir,
        '--protected-mode',
        'no',
      ],
      { stdio: 'ignore' },
    );
    exited = new Promise((resolve) => child.once('exit', resolve));
    for (let i = 0; i < 100; i++) {
      if (await ping(port)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill('SIGKILL');
    throw new Error('redis-server did not start');
  }
  async function stop() {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT'); // a frozen server must be able to hear the SIGTERM
      child.kill('SIGTERM');
    }
    await exited;
  }
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop,
    /** Freezes the process (SIGSTOP): connections stay open, nothing answers. */
    pause: () => void child.kill('SIGSTOP'),
    /** Lets a frozen process go on (SIGCONT). */
    resume: () => void child.kill('SIGCONT'),
    /** Stops the server, waits `downMs`, and starts it again on the same port, with its data. */
    async restart(downMs = 0) {
      await stop();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await start();
    },
  };
}
