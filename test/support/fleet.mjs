// A fleet of endpoint instances (separate Node processes, test/support/fleet-instance.mjs)
// and a round-robin client that retries each request with its Idempotency-Key on the next
// instance, as a load balancer in front of a browser's retries would. For the fleet test
// and the fleet row of `npm run bench`.
import { fileURLToPath } from 'node:url';
import { spawnListening } from './processes.mjs';

const INSTANCE = fileURLToPath(new URL('./fleet-instance.mjs', import.meta.url));

/** What an instance needs to reach the emulator (and Redis, when given). */
export function fleetConfig(
  emulator,
  { redisUrl, leaseMs, sweepIntervalMs, callbackFailEvery, queue, maxQueued, stalledIntervalMs, lockDurationMs } = {},
) {
  const { tokenUrl, serviceUrls, clientId, clientSecret } = emulator;
  return {
    redisUrl,
    tokenUrl,
    serviceUrls,
    clientId,
    clientSecret,
    leaseMs,
    sweepIntervalMs,
    callbackFailEvery,
    queue,
    maxQueued,
    stalledIntervalMs,
    lockDurationMs,
  };
}

/** Starts `count` instances; resolves once each listens. */
export async function startFleet(count, config) {
  const instances = await Promise.all(
    Array.from({ length: count }, async (_, instance) => {
      const { child, port } = await spawnListening(INSTANCE, [JSON.stringify({ ...config, instance })]);
      const record = {
        child,
        url: `http://127.0.0.1:${port}/device-risk`,
        callbackUrl: `http://127.0.0.1:${port}/callback`,
        alive: true,
        inFlight: 0,
        inFlightAtKill: 0,
        orphansReported: 0,
        /** Workflow execution ids, one per call of onResult (`tries`) and per call that returned (`results`). */
        tries: [],
        results: [],
        /** With the queue: the customerInternalReference of each onResult call. */
        decided: [],
        /** What it reported through onError (orphans aside), a line each: "<code> <message>". */
        errors: [],
      };
      let pending = '';
      child.stdout.on('data', (chunk) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop();
        for (const line of lines) {
          const [kind, rest] = [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)];
          if (kind === 'orphan') record.orphansReported++;
          else if (kind === 'try') record.tries.push(rest);
          else if (kind === 'result') record.results.push(rest);
          else if (kind === 'decided') record.decided.push(rest);
          else if (kind === 'error') record.errors.push(rest);
        }
      });
      return record;
    }),
  );
  return {
    instances,
    /**
     * SIGKILL, as a crashed machine: no cleanup, leases left behind. `inFlightAtKill` keeps
     * how many requests it was working on: each can have left at most one account create on
     * the wire.
     */
    kill(index) {
      instances[index].alive = false;
      instances[index].inFlightAtKill = instances[index].inFlight;
      instances[index].child.kill('SIGKILL');
    },
    /**
     * `kill`, once the instance has `atLeast` requests in flight (polled each millisecond, up
     * to `withinMs`): a test of what a crash loses needs something to lose. Killed at an idle
     * moment, the run could show no lost answer at all (seen on a busy CI machine); with two,
     * one of them is still waiting for its answer even if the other's is already in its buffer.
     */
    async killBusy(index, { atLeast = 2, withinMs = 10_000 } = {}) {
      const until = performance.now() + withinMs;
      while (instances[index].inFlight < atLeast) {
        if (performance.now() > until)
          throw new Error(`instance-${index} had fewer than ${atLeast} requests in flight for ${withinMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      this.kill(index);
    },
    async stop() {
      await Promise.all(
        instances.map(({ child }) =>
          child.exitCode === null && child.signalCode === null
            ? new Promise((resolve) => {
                child.once('exit', resolve);
                return child.kill('SIGTERM');
              })
            : undefined,
        ),
      );
    },
  };
}

/**
 * Sends one request per key (`blackbox` with the key in it, as each checkout brings its own
 * (src/server/endpoint/reuse.ts); `order` = the key), `concurrency` at a time, round
 * robin over the live instances; a failed attempt (non-200 or no answer) is retried with the
 * same key on the next instance, after its Retry-After (capped at `maxRetryWaitMs`).
 * `onProgress(done)` runs after each finished key (the caller injects faults there).
 */
/** `blackbox` made the key's own: the key's hex after its '0400' prefix. */
export const blackboxFor = (blackbox, key) =>
  blackbox.slice(0, 4) + Buffer.from(key).toString('hex') + blackbox.slice(4);

export async function drive({
  fleet,
  keys,
  concurrency,
  blackbox,
  maxAttempts = 60,
  maxRetryWaitMs = 200,
  onProgress = () => {},
}) {
  let next = 0;
  let turn = 0;
  let done = 0;
  const results = [];
  const pick = () => {
    const live = fleet.instances.filter((i) => i.alive);
    return live[turn++ % live.length];
  };
  async function one(key) {
    const started = performance.now();
    const statuses = [];
    const codes = [];
    /** The longest wait for one attempt's answer (or for its failure), in ms. */
    let slowestMs = 0;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      let wait = 20;
      const instance = pick();
      instance.inFlight++;
      const sent = performance.now();
      try {
        const response = await fetch(instance.url, {
          method: 'POST',
          headers: {
            origin: 'https://shop.example',
            'content-type': 'application/json',
            'idempotency-key': key,
            'x-order': key,
          },
          body: JSON.stringify({ blackbox: blackboxFor(blackbox, key) }),
          signal: AbortSignal.timeout(15_000),
        });
        statuses.push(response.status);
        const body = await response.json();
        // 200: checked (or a retry of a checked key); 202: accepted by the queue.
        if (response.status === 200 || response.status === 202)
          return { key, ok: true, body, statuses, codes, slowestMs, ms: performance.now() - started };
        codes.push(body?.error?.code);
        if (response.status < 500 && response.status !== 409 && response.status !== 429)
          return { key, ok: false, body, statuses, codes, slowestMs, ms: performance.now() - started };
        wait = Math.min(maxRetryWaitMs, Number(response.headers.get('retry-after') ?? 0) * 1000 || 20);
      } catch {
        statuses.push('no answer');
      } finally {
        instance.inFlight--;
        slowestMs = Math.max(slowestMs, performance.now() - sent);
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    return { key, ok: false, statuses, codes, slowestMs, ms: performance.now() - started };
  }
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < keys.length) {
        const key = keys[next++];
        results.push(await one(key));
        await onProgress(++done);
      }
    }),
  );
  return results;
}
