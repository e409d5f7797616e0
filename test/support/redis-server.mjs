// Runs Debian's redis-server on a free loopback port, for the fleet tests and the fleet
// benchmark, in its own directory. It persists every write (append-only file, fsync
// always), as a production Redis holding Idempotency-Keys must: `restart()` stops it and
// starts it again on the same port with its data (the fleet tests' "Redis went away").
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.mjs';

export const REDIS_SERVER = process.env.REDIS_SERVER_PATH ?? '/usr/bin/redis-server';
export const REDIS_CLI = process.env.REDIS_CLI_PATH ?? '/usr/bin/redis-cli';
/** redis-server and redis-cli (Debian's redis-server package brings both; the Cluster tests need redis-cli). */
export const redisAvailable = () => existsSync(REDIS_SERVER) && existsSync(REDIS_CLI);

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

/** Starts redis-server (with `args` added); resolves once it answers PING. Throws when it cannot. */
export async function startRedis({ args = [] } = {}) {
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
        ...args,
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
    /**
     * Stops the server (SIGTERM; `kill`: SIGKILL, as a crash, with no last write), waits
     * `downMs`, and starts it again on the same port, with what its append-only file holds.
     */
    async restart(downMs = 0, { kill = false } = {}) {
      if (kill) {
        child.kill('SIGKILL');
        await exited;
      } else await stop();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await start();
    },
  };
}

const cli = (args) =>
  new Promise((resolve, reject) =>
    execFile(REDIS_CLI, args, { timeout: 30_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`redis-cli ${args.join(' ')}: ${stderr || error.message}`)) : resolve(stdout),
    ),
  );

/**
 * A Redis Cluster of `masters` nodes (no replicas), each a redis-server as above with
 * `cluster-enabled yes`, its bus on a port of its own, joined by `redis-cli --cluster create`.
 * Resolves once every node reports `cluster_state:ok`.
 */
export async function startRedisCluster(masters = 3) {
  const nodes = await Promise.all(
    Array.from({ length: masters }, async () =>
      startRedis({
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-port',
          String(await freePort()),
        ],
      }),
    ),
  );
  const stop = () => Promise.all(nodes.map((node) => node.stop()));
  try {
    await cli([
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    for (const node of nodes) {
      for (let i = 0; ; i++) {
        if ((await cli(['-p', String(node.port), 'cluster', 'info'])).includes('cluster_state:ok')) break;
        if (i === 200) throw new Error(`the cluster node on ${node.port} never reported cluster_state:ok`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes, rootNodes: nodes.map((n) => ({ url: n.url })), stop };
}

/**
 * A master, one replica and one Sentinel (redis-server --sentinel, quorum 1) watching them as
 * `mymaster`. Resolves once the Sentinel knows the replica, so that `failover()` (SENTINEL
 * FAILOVER) can promote it; `failover()` resolves once the Sentinel names the replica as master.
 */
export async function startRedisSentinel() {
  const master = await startRedis();
  const replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
  const dir = mkdtempSync(join(tmpdir(), 'bbc-sentinel-'));
  const port = await freePort();
  const config = join(dir, 'sentinel.conf');
  writeFileSync(
    config,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      'protected-mode no',
      `dir ${dir}`,
      `sentinel monitor mymaster 127.0.0.1 ${master.port} 1`,
      'sentinel down-after-milliseconds mymaster 1000',
      'sentinel failover-timeout mymaster 10000',
      '',
    ].join('\n'),
  );
  const child = spawn(REDIS_SERVER, [config, '--sentinel'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    await Promise.all([master.stop(), replica.stop()]);
  };
  const sentinel = (...args) => cli(['-p', String(port), 'sentinel', ...args]);
  const masterPort = async () => Number((await sentinel('get-master-addr-by-name', 'mymaster')).trim().split('\n')[1]);
  try {
    for (let i = 0; ; i++) {
      if (await ping(port)) {
        const replicas = await sentinel('replicas', 'mymaster').catch(() => '');
        const link = await cli(['-p', String(replica.port), 'info', 'replication']);
        if (replicas.includes(String(replica.port)) && link.includes('master_link_status:up')) break;
      }
      if (i === 400) throw new Error('the Sentinel never saw the replica');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    master,
    replica,
    sentinels: [{ host: '127.0.0.1', port }],
    name: 'mymaster',
    masterPort,
    async failover() {
      await sentinel('failover', 'mymaster');
      for (let i = 0; (await masterPort()) !== replica.port; i++) {
        if (i === 400) throw new Error('the Sentinel never promoted the replica');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop,
  };
}
