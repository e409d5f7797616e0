#!/usr/bin/env node
// A small HTTP load generator, run as its own process so that it does not share the
// event loop with the server it measures. Input: one JSON argument; output: JSON stats.
//   { url, method, headers, body, uniqueKey, concurrency, total }
import http from 'node:http';

const spec = JSON.parse(process.argv[2]);
const target = new URL(spec.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });
const latencies = [];
let errors = 0;
let next = 0;

function once(i) {
  return new Promise((resolve) => {
    const headers = { ...spec.headers };
    if (spec.uniqueKey)
      headers['idempotency-key'] = `bench-${process.pid}-${i}-${Math.random().toString(36).slice(2, 10)}`;
    // Each checkout its own blackbox too: a used one is refused (src/server/endpoint/reuse.ts).
    const body =
      spec.uniqueKey && spec.body
        ? spec.body.replace('"blackbox":"0400', `"blackbox":"0400${process.pid}x${i}`)
        : (spec.body ?? null);
    if (body) headers['content-length'] = Buffer.byteLength(body);
    const started = process.hrtime.bigint();
    const req = http.request(
      {
        hostname: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: spec.method ?? 'GET',
        headers,
        agent,
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
          if (res.statusCode < 200 || res.statusCode >= 300) errors++;
          resolve();
        });
      },
    );
    req.on('error', () => {
      errors++;
      resolve();
    });
    req.end(body);
  });
}

async function worker() {
  while (next < spec.total) await once(next++);
}

const started = performance.now();
await Promise.all(Array.from({ length: spec.concurrency }, worker));
const durationMs = performance.now() - started;
latencies.sort((a, b) => a - b);
const pick = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
agent.destroy();
console.log(
  JSON.stringify({
    count: latencies.length,
    errors,
    durationMs,
    rps: (latencies.length / durationMs) * 1000,
    p50: pick(0.5),
    p99: pick(0.99),
  }),
);
