#!/usr/bin/env node
// `npm run bench`: size, browser speed (ratios against the plain vendor integration)
// and server throughput, measured side by side in one run. Prints a table and writes
// bench-results/latest.json. Timing targets are reported, not asserted.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { measure } from '../scripts/size.mjs';
import { sizeTable } from '../scripts/size-docs.mjs';
import { measureAnchors } from './anchors.mjs';
import { benchScriptTime } from './script-time.mjs';
import { benchBrowser } from './browser.mjs';
import { benchEngines } from './engines.mjs';
import { benchEndpoint, benchProxy } from './server.mjs';
import { benchFleet, benchStoreCost } from './fleet.mjs';
import { benchQueue } from './queue.mjs';
import { benchFloods, benchQuota } from './quota.mjs';
import { benchGatewayFlood } from './gateway-flood.mjs';
import { realLoaderSource } from '../test/support/real-loader.mjs';

const quick = process.argv.includes('--quick');
// `npm run bench -- --fleet`: the fleet row alone.
const fleetOnly = process.argv.includes('--fleet');
// `npm run bench -- --quota`: the account quota spent, and floods beside honest shoppers, alone.
const quotaOnly = process.argv.includes('--quota');
// `npm run bench -- --queue`: the checkouts at the service's real limits alone.
const queueOnly = process.argv.includes('--queue') || quotaOnly;
const machine = `${cpus().length} × ${cpus()[0]?.model.trim()}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
const fmt = (n, d = 0) => (n === undefined || Number.isNaN(n) ? '—' : n.toFixed(d));
const log = (s) => console.log(s);

log(`blackbox-capture benchmark on ${machine}${quick ? ' (quick)' : ''}\n`);
let size, anchors, scriptTime, browserRuns, engineRuns, endpoint, proxy;
/** The target for the package's own script time before the loader request (issue #68). */
const SCRIPT_TARGET_MS = 1.5;
// `npm run bench -- --engines`: the engines table alone.
const enginesOnly = process.argv.includes('--engines');
// `npm run bench -- --size`: the size tables and the script time alone.
const sizeOnly = process.argv.includes('--size');
/** Time to the final blackbox in every engine, against the plain integration with the same hint, one loader after the other. */
async function enginesTable() {
  const runs = {};
  for (const [loader, loaderSource] of Object.entries({ emulated: undefined, 'real 5.2.2': realLoaderSource() }))
    runs[loader] = await benchEngines({ rounds: quick ? 3 : 15, rttMs: 100, loaderSource });
  const engines = Object.keys(runs.emulated.engines);
  log(
    `Browser engines: navigation start → final blackbox, every origin one simulated 100 ms round trip away; ratio = integration ÷ plain-hinted (the vendor's tags with the same preconnect hint) in the same round, median (p10–p90) of ${runs.emulated.rounds} rounds:`,
  );
  log(
    `| loader | integration | ${engines.map((e) => runs.emulated.engines[e].version).join(' | ')} |\n|---|---|${engines.map(() => '---:').join('|')}|`,
  );
  for (const [loader, run] of Object.entries(runs)) {
    for (const name of Object.keys(run.engines[engines[0]].variants)) {
      const cell = (engine) => {
        const v = run.engines[engine].variants[name];
        return v.ratioMedian === undefined
          ? `${fmt(v.medianMs)} ms`
          : `${fmt(v.ratioMedian, 3)} (${fmt(v.ratioP10, 3)}–${fmt(v.ratioP90, 3)})`;
      };
      log(`| ${loader} | ${name} | ${engines.map(cell).join(' | ')} |`);
    }
  }
  log('');
  return runs;
}

/** Sizes beside the pinned anchors, and the script time before the loader request. */
async function sizeTables() {
  size = await measure();
  anchors = await measureAnchors();
  log(sizeTable(size, anchors));
  scriptTime = await benchScriptTime({ rounds: quick ? 3 : 15, loaderSource: realLoaderSource() });
  log(
    `Script time before the loader request (the renderer's main-thread CPU time: a module's compile and its evaluation up to the loader request, the loader's compile and evaluation; Chromium traced at the browser level, attached to no page; median (p10–p90) of ${scriptTime.rounds} loads each; target for the package's own ${SCRIPT_TARGET_MS} ms):`,
  );
  log('| script | ms | ÷ the loader alone |\n|---|---:|---:|');
  for (const [name, ms] of Object.entries(scriptTime.ms)) {
    const [p10, p90] = scriptTime.spread[name];
    log(
      `| ${name} | ${fmt(ms, 2)} (${fmt(p10, 2)}–${fmt(p90, 2)}) | ${fmt(ms / scriptTime.ms['vendor loader alone'], 2)} |`,
    );
  }
  log(
    `The package's own (beyond the config object and the loader tag alone): ${fmt(scriptTime.ownMs, 2)} ms, ${fmt(scriptTime.ownRatioToLoader, 2)} of the loader's; the full entry's ${fmt(scriptTime.ownMsFullEntry, 2)} ms.`,
  );
  log('');
}

if (sizeOnly) await sizeTables();
else if (enginesOnly) engineRuns = await enginesTable();
else if (!fleetOnly && !queueOnly) {
  await sizeTables();

  // Every browser figure with the emulator's loader and with the vendor's real loader 5.2.2.
  const loaders = { emulated: undefined, 'real 5.2.2': realLoaderSource() };
  browserRuns = {};
  for (const [loader, loaderSource] of Object.entries(loaders)) {
    browserRuns[loader] = {
      loopback: await benchBrowser({ rounds: quick ? 6 : 60, loaderSource }),
      rtt: await benchBrowser({ rounds: quick ? 3 : 30, rttMs: 100, loaderSource }),
    };
  }
  for (const [loader, { loopback, rtt }] of Object.entries(browserRuns)) {
    log(
      `Browser, ${loader} loader: navigation start → final blackbox, Chromium, collection scripts 20/80 ms; ratio = variant ÷ plain in the same round:`,
    );
    log(
      '| integration | loopback median | ratio median (p10–p90) | 100 ms RTT median | ratio median (p10–p90) | 100 ms RTT ratio vs plain-hinted (p10–p90) | main thread added | our calls | loader tag insertion (apart) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const name of Object.keys(loopback.variants)) {
      const a = loopback.variants[name];
      const b = rtt.variants[name];
      const r = (v) =>
        v.ratioMedian === undefined
          ? '1 (baseline)'
          : `${fmt(v.ratioMedian, 3)} (${fmt(v.ratioP10, 3)}–${fmt(v.ratioP90, 3)})`;
      const ms = (v) => (v === undefined ? '—' : `${fmt(v, 2)} ms`);
      const hinted =
        b.hintedRatioMedian === undefined
          ? '—'
          : `${fmt(b.hintedRatioMedian, 3)} (${fmt(b.hintedRatioP10, 3)}–${fmt(b.hintedRatioP90, 3)})`;
      log(
        `| ${name} | ${fmt(a.medianMs)} ms | ${r(a)} | ${fmt(b.medianMs)} ms | ${r(b)} | ${hinted} | ${ms(a.mainThreadAddedMs)} | ${ms(a.ownJsMs)} | ${ms(a.loaderTagInsertMs)} |`,
      );
    }
    const mt = loopback.mainThreadMs;
    log(
      `Our calls, all variants: median ${fmt(mt.median, 2)} ms, p90 ${fmt(mt.p90, 2)} ms (call ${fmt(mt.syncCallMedian, 2)} ms with the tag insertion + callbacks ${fmt(mt.callbacksMedian, 2)} ms); the page's first touch of document: ${fmt(mt.documentTouchMedian, 2)} ms.\n`,
    );
  }
  log('Side by side, ratio medians (loopback / 100 ms RTT):');
  log(
    `| integration | ${Object.keys(browserRuns).join(' | ')} |\n|---|${Object.keys(browserRuns)
      .map(() => '---:')
      .join('|')}|`,
  );
  for (const name of Object.keys(browserRuns.emulated.loopback.variants).filter((n) => n !== 'plain')) {
    log(
      `| ${name} | ${Object.values(browserRuns)
        .map(
          ({ loopback, rtt }) =>
            `${fmt(loopback.variants[name].ratioMedian, 3)} / ${fmt(rtt.variants[name].ratioMedian, 3)}`,
        )
        .join(' | ')} |`,
    );
  }
  log(
    'Main thread added: median over rounds of (DevTools TaskDuration of the page load − that of the plain page), loopback.',
  );
  log(
    "Our calls: captureBlackbox() plus our bb_callback over all updates, less the loader tag insertion, performance.now() (the loopback pages are cross-origin isolated: 5 µs ticks), after the page's own first touch of document.",
  );
  log(
    "Loader tag insertion: the browser starting the loader's fetch when the package appends the tag (any script-inserted tag costs it; adopt mode has none), not in our calls.",
  );
  const { loopback, rtt } = browserRuns.emulated;
  log(
    `Rounds: ${loopback.rounds} on loopback, ${rtt.rounds} with every origin one simulated 100 ms round trip away (connection set-up included), per loader.\n`,
  );

  engineRuns = await enginesTable();
  endpoint = await benchEndpoint({ requests: quick ? 300 : 2000, concurrency: 32 });
  log('Server: integrator endpoint (token, account, upload, finalize, status) against the emulator, no added latency:');
  log(
    '| requests | concurrency | req/s | p50 | p99 | errors | token requests | transactions processed |\n|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  log(
    `| ${endpoint.count} | ${endpoint.concurrency} | ${fmt(endpoint.rps)} | ${fmt(endpoint.p50, 1)} ms | ${fmt(endpoint.p99, 1)} ms | ${endpoint.errors} | ${endpoint.tokenRequests} | ${endpoint.transactionsProcessed} |\n`,
  );

  proxy = await benchProxy({ requests: quick ? 500 : 4000, concurrency: 32, rounds: quick ? 1 : 5 });
  log(
    `Server: first-party proxy, GET static_wdp.js, ${proxy.concurrency} concurrent, median of ${proxy.rounds} alternating rounds:`,
  );
  log('| target | req/s | p50 | p99 | errors | req/s vs direct |\n|---|---:|---:|---:|---:|---:|');
  for (const [name, t] of Object.entries(proxy.targets)) {
    log(
      `| ${name === 'direct' ? 'collector, direct' : name === 'node' ? 'createFirstPartyProxy (Node)' : 'nginx, shipped config'} | ${fmt(t.rps)} | ${fmt(t.p50, 2)} ms | ${fmt(t.p99, 2)} ms | ${t.errors} | ${fmt(t.rps / proxy.targets.direct.rps, 2)} |`,
    );
  }
  if (proxy.nginxAvailable) {
    const r = proxy.nodeToNginx;
    log(
      `Node proxy ÷ nginx, req/s: ${fmt(proxy.targets.node.rps / proxy.targets.nginx.rps, 2)} (medians); per round ${fmt(r.median, 2)} median, ${fmt(r.min, 2)}–${fmt(r.max, 2)}`,
    );
  } else log('(nginx not installed: its row is missing)');
}

const fleetRow =
  sizeOnly || enginesOnly || queueOnly
    ? undefined
    : await benchFleet({ requests: quick ? 400 : 2000, concurrency: 64 });
if (fleetRow?.redisAvailable) {
  log(
    `Server: a fleet on one Redis against the emulator, ${fleetRow.redis.requests} requests at concurrency ${fleetRow.redis.concurrency}, faults on account create (429), upload (503) and finalize (dropped); failed attempts retried on the next instance; beside it one instance on its memory store, same requests and faults:`,
  );
  log(
    '| set-up | requests | concurrency | faults | req/s | p50 | p99 | lost | transactions per key (max) | keys without one | token requests | retries |\n|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  const name = (row) =>
    row.store === 'redis'
      ? `${row.instances} instances, one Redis`
      : row.instances > 1
        ? `${row.instances} instances, each its own memory`
        : '1 instance, memory';
  for (const row of [fleetRow.memory, fleetRow.unshared, fleetRow.redis, fleetRow.calmMemory, fleetRow.calmRedis]) {
    log(
      `| ${name(row)} | ${row.requests} | ${row.concurrency} | ${row.faults ? 'yes' : 'none'} | ${fmt(row.rps)} | ${fmt(row.p50, 1)} ms | ${fmt(row.p99, 1)} ms | ${row.lost} | ${row.maxTransactionsPerKey} | ${row.keysWithoutTransaction} | ${row.tokenRequests} | ${row.retries} |`,
    );
  }
  log(
    `p99 overhead of the Redis fleet: with faults at 64, ${fmt(fleetRow.redis.p99 - fleetRow.memory.p99, 1)} ms over one memory instance (${fmt(fleetRow.redis.p99 - fleetRow.unshared.p99, 1)} ms over four unshared); at 4 without faults, ${fmt(fleetRow.calmRedis.p99 - fleetRow.calmMemory.p99, 1)} ms (p50 ${fmt(fleetRow.calmRedis.p50 - fleetRow.calmMemory.p50, 1)} ms)\n`,
  );
  const cost = await benchStoreCost({ requests: quick ? 100 : 300 });
  fleetRow.storeCost = cost;
  log(
    `The store's own cost, one endpoint in one process, ${cost.requests} sequential requests per store in alternating rounds: memory p50 ${fmt(cost.memory.p50, 2)} ms, p99 ${fmt(cost.memory.p99, 2)} ms; Redis p50 ${fmt(cost.redis.p50, 2)} ms, p99 ${fmt(cost.redis.p99, 2)} ms; Redis adds ${fmt(cost.redis.p50 - cost.memory.p50, 2)} ms at p50 and ${fmt(cost.redis.p99 - cost.memory.p99, 2)} ms at p99\n`,
  );
} else if (fleetRow) log('(redis-server not installed: no fleet row)\n');
/** Checkouts at the service's real limits (#47): accepted at once and checked as the quota allows. */
let queueRuns;
if (!sizeOnly && !enginesOnly && !fleetOnly && !quotaOnly) {
  queueRuns = await benchQueue({ offerMs: quick ? 5_000 : 20_000, drainMs: quick ? 5_000 : 30_000 });
  const { limits, offerMs, drainMs } = queueRuns;
  log(
    `Checkouts at the service's real limits: the emulator's defaults (account requests ${limits.accountRequestsPerSecond} a second, bursts of ${limits.accountBurst}; retrieval ${limits.retrievalPerSecond} a second); checkouts offered for ${offerMs / 1000} s at 3× and 20× the account limit, then up to ${drainMs / 1000} s to drain; the browser's four attempts:`,
  );
  log(
    '| set-up | offered a second | offered | accepted | accept p50 / p99 | decided in the run | to decision p50 / p99 | left queued | drain /s | service 429s | queue full | transactions per key (max) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const row of queueRuns.rows) {
    log(
      `| ${row.name} | ${row.rate} | ${row.offered} | ${row.accepted} (${fmt(100 * row.acceptedShare)} %) | ${fmt(row.acceptP50, 1)} / ${fmt(row.acceptP99, 1)} ms | ${row.decided} | ${fmt(row.decisionP50 / 1000, 1)} / ${fmt(row.decisionP99 / 1000, 1)} s | ${row.queuedLeft} | ${fmt(row.drainPerSecond, 2)} | ${row.serviceRefusals} | ${row.queueFull} | ${row.transactionsPerKeyMax} |`,
    );
  }
  log('Backlog over time (queued checkouts, every 5 s):');
  for (const row of queueRuns.rows.filter((r) => !r.name.includes('within')))
    log(
      `  ${row.name}, ${row.rate}/s: ${row.backlog
        .filter((b) => b.s % 5 === 0)
        .map((b) => b.queued)
        .join(' ')}`,
    );
  log('');
}
/** The account quota spent on one instance and on four processes, and floods beside honest shoppers (#58). */
let quotaRuns;
if (!sizeOnly && !enginesOnly && !fleetOnly && (!queueOnly || quotaOnly)) {
  const quota = await benchQuota({ spanMs: quick ? 20_000 : 60_000 });
  log(
    `The account quota spent: the emulator's defaults (${quota.limit.accountRequestsPerSecond} a second, bursts of ${quota.limit.serviceBurst}), the client's (bursts of ${quota.limit.clientBurst}); ${quota.backlog} checkouts queued at once, account requests the service took counted for ${quota.spanMs / 1000} s once ${quota.settleMs / 1000} s had spent the burst:`,
  );
  log(
    '| set-up | taken a second | ÷ limit | each 10 s (min–max) | taken | refused (429) |\n|---|---:|---:|---:|---:|---:|',
  );
  for (const row of quota.rows)
    log(
      `| ${row.name} | ${fmt(row.perSecond, 3)} | ${fmt((100 * row.perSecond) / quota.limit.accountRequestsPerSecond, 1)} % | ${fmt(row.per10Min, 2)}–${fmt(row.per10Max, 2)} | ${row.taken} | ${row.refused} |`,
    );
  const floods = await benchFloods(quick ? { offerMs: 10_000, drainMs: 30_000 } : {});
  log(
    "Floods beside honest shoppers (one instance, memory queue, admission at its defaults, then by the shop's session; an honest checkout every 2 s from an IPv4 address of its own):",
  );
  log(
    '| honest shoppers | flood answers | honest answers | honest decided | to decision p50 / p90 / max | left queued |\n|---|---|---|---:|---:|---:|',
  );
  const answers = (a) =>
    Object.entries(a)
      .map(([status, n]) => `${n}× ${status}`)
      .join(', ') || '—';
  for (const row of floods)
    log(
      `| ${row.name} | ${answers(row.floodAnswers)} | ${answers(row.honestAnswers)} | ${row.honestDecided} / ${row.honestOffered} | ${fmt(row.honestP50, 1)} / ${fmt(row.honestP90, 1)} / ${fmt(row.honestMax, 1)} s | ${row.queuedLeft} |`,
    );
  // The gateway's signed-in shoppers beside a guest-token flood (#65), at full scale even when quick: the target's conditions.
  const gatewayFloods = await benchGatewayFlood();
  log(
    "\nThe gateway (`blackbox-capture serve` as a process, the emulator's default limits) beside a guest-token flood: 20 checkouts a second for 30 s from 400 addresses, each with a freshly minted guest token; a shopper every 2 s, each from an address of its own; decided = its decision webhook within 30 s of its post:",
  );
  log(
    '| shoppers | flood answers | flood decided | shopper answers | decided within 30 s | to decision p50 / p90 / max |\n|---|---|---:|---|---:|---:|',
  );
  for (const row of gatewayFloods)
    log(
      `| ${row.name} | ${answers(row.floodAnswers)} | ${row.floodDecided} | ${answers(row.shopperAnswers)} | ${row.decidedInTime} / ${row.shoppersOffered} | ${fmt(row.p50, 1)} / ${fmt(row.p90, 1)} / ${fmt(row.max, 1)} s |`,
    );
  log('');
  quotaRuns = { quota, floods, gatewayFloods };
}
mkdirSync('bench-results', { recursive: true });
writeFileSync(
  `bench-results/${sizeOnly ? 'size' : fleetOnly ? 'fleet' : enginesOnly ? 'engines' : quotaOnly ? 'quota' : queueOnly ? 'queue' : 'latest'}.json`,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      machine,
      quick,
      size,
      sizeAnchors: anchors,
      scriptTime,
      browser: browserRuns,
      engines: engineRuns,
      endpoint,
      proxy,
      fleet: fleetRow,
      queue: queueRuns,
      quota: quotaRuns,
    },
    null,
    2,
  ),
);
log(
  `\nWrote bench-results/${sizeOnly ? 'size' : fleetOnly ? 'fleet' : enginesOnly ? 'engines' : quotaOnly ? 'quota' : queueOnly ? 'queue' : 'latest'}.json`,
);
