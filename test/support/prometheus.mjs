// Debian's Prometheus and promtool for the tests of ops/prometheus and ops/grafana:
// PROMETHEUS_PATH names the folder that holds both (default /usr/bin). A missing one is
// skipped and named; with CI set it fails the run.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.mjs';

const dir = process.env.PROMETHEUS_PATH ?? '/usr/bin';
export const PROMETHEUS = join(dir, 'prometheus');
export const PROMTOOL = join(dir, 'promtool');

export function prometheusAvailable() {
  const present = existsSync(PROMETHEUS) && existsSync(PROMTOOL);
  if (!present && process.env.CI)
    throw new Error(`CI is set and ${PROMETHEUS} or ${PROMTOOL} is missing (.ci/run installs prometheus)`);
  return present;
}

/** Runs promtool with `args` (and `input` on its stdin); resolves with its exit code and output. */
export function promtool(args, cwd, input) {
  return new Promise((resolve) => {
    const child = spawn(PROMTOOL, args, { cwd, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (input !== undefined) child.stdin.end(input);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/**
 * A Prometheus on a free loopback port scraping `targets` (host:port) every second at
 * `/metrics`, evaluating `ruleFiles` every second; resolves once it is ready.
 */
export async function startPrometheus({ targets, ruleFiles }) {
  const work = mkdtempSync(join(tmpdir(), 'bbc-prometheus-'));
  const port = await freePort();
  const config = join(work, 'prometheus.yml');
  writeFileSync(
    config,
    JSON.stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s', scrape_timeout: '1s' },
      rule_files: ruleFiles,
      scrape_configs: [{ job_name: 'shop', metrics_path: '/metrics', static_configs: [{ targets }] }],
    }),
  );
  const child = spawn(
    PROMETHEUS,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(work, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--web.enable-lifecycle',
    ],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let tries = 0; ; tries++) {
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (tries > 300 || child.exitCode !== null) throw new Error('prometheus did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    /** The result of an instant query (`time` in epoch seconds, default now). */
    async query(expr, time) {
      const params = new URLSearchParams({ query: expr, ...(time === undefined ? {} : { time: String(time) }) });
      const body = await (await fetch(`${url}/api/v1/query?${params}`)).json();
      if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
      return body.data.result;
    },
    /** The result of a range query from `start` to `end` (epoch seconds), `step` seconds apart. */
    async queryRange(expr, start, end, step = 1) {
      const params = new URLSearchParams({ query: expr, start: String(start), end: String(end), step: String(step) });
      const body = await (await fetch(`${url}/api/v1/query_range?${params}`)).json();
      if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
      return body.data.result;
    },
    async alerts() {
      return (await (await fetch(`${url}/api/v1/alerts`)).json()).data.alerts;
    },
    stop() {
      child.kill();
    },
  };
}
