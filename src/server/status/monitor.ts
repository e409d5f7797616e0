/**
 * The status monitor: samples this process's counters and its queues' gauges every
 * `sampleIntervalMs` into the time series (series.ts) kept in the store, and holds the fleet's
 * reporter lease, so that a shared queue's figures are reported by one instance only, in the
 * Prometheus exposition, the OpenTelemetry gauges and the series alike: a `sum()` over the
 * fleet is then the fleet's (docs/operating.md#metrics-and-the-status-page).
 */
import { sleep, systemNow, type Now, unrefd } from '../time/clock.js';
import { DeviceRiskError, ERR_STORE_UNAVAILABLE, safeOnError } from '../errors.js';
import { statusMessages } from '../messages.js';
import { checkOptions } from '../options-table.js';
import { STATUS_MONITOR_OPTIONS } from './settings.js';
import { defaultInstanceId, readBacklogs, reportFleetFiguresWhen, type BacklogReading } from '../metrics.js';
import { takeLease, type Lease } from '../store/lease.js';
import { createMemoryStore, isMemoryStore, type Store } from '../store/store.js';
import { addSample, countKey, parseSeries, type GaugeSample, type Series } from './series.js';
import { counterValues } from './tally.js';

export interface StatusMonitorOptions {
  /**
   * Where the time series and the reporter lease live: on a fleet, the store the handlers
   * share (createRedisStore), so that the page shows the fleet. Default this process's memory.
   */
  store?: Store;
  /** Prefix of the monitor's keys in the store. Default `bbc:status:`. */
  namespace?: string;
  /** This instance's name: the handler's `instanceId`. Default hostname:pid. */
  instanceId?: string;
  /** How often the series is written, in ms. Default 10000; at least 1000. */
  sampleIntervalMs?: number;
  /** Told when a sample cannot be written (the store away): the page then shows what it holds. Default console.error. */
  onError?: (error: unknown) => void;
  now?: Now;
}

export interface StatusMonitor {
  /** The gauges now: this instance's queues, and the fleet's when this instance is the reporter. */
  readings(): Promise<BacklogReading[]>;
  /** The time series, as the store holds it. */
  series(): Promise<Series>;
  /** True while this instance reports the shared queue's figures (always with a memory store). */
  readonly reporter: boolean;
  /** Takes one sample now (the timer does it every `sampleIntervalMs`). */
  sample(): Promise<void>;
  /** Stops the timer and gives up the lease. */
  close(): Promise<void>;
}

/** Writes of the series that lost a race with another instance's are tried again this many times. */
const WRITE_TRIES = 5;
/** The series outlives its day by an hour, then goes: a fleet switched off leaves nothing behind. */
const SERIES_TTL_MS = 25 * 3_600_000;

/**
 * Counter values already added to a store's series, per series: each sample adds what they
 * gained since. Shared by the monitors of one process on one series, so that each increase
 * reaches it once, however many monitors write it.
 */
const sentByStore = new WeakMap<Store, Map<string, Map<string, number>>>();
function sentTo(store: Store, seriesKey: string): Map<string, number> {
  const bySeries = sentByStore.get(store) ?? new Map<string, Map<string, number>>();
  sentByStore.set(store, bySeries);
  const sent = bySeries.get(seriesKey) ?? new Map<string, number>();
  bySeries.set(seriesKey, sent);
  return sent;
}

export function createStatusMonitor(options: StatusMonitorOptions = {}): StatusMonitor {
  checkOptions(options, STATUS_MONITOR_OPTIONS);
  const intervalMs = options.sampleIntervalMs ?? STATUS_MONITOR_OPTIONS.sampleIntervalMs.default;
  const store = options.store ?? createMemoryStore();
  const shared = !isMemoryStore(store);
  const namespace = options.namespace ?? STATUS_MONITOR_OPTIONS.namespace.default;
  const seriesKey = `${namespace}series`;
  const now = options.now ?? systemNow;
  const onError = options.onError
    ? safeOnError(options.onError)
    : (error: unknown) => console.error('[blackbox-capture/server]', error);
  let lease: Lease | undefined;
  const sent = sentTo(store, seriesKey);

  const reporter = () => !shared || (lease !== undefined && lease.lost === undefined);
  reportFleetFiguresWhen(reporter);

  /** One attempt at a time: two attempts at once could each take a lease, and one be left renewing unheld. */
  let taking: Promise<void> | undefined;
  function holdLease(): Promise<void> {
    if (!shared || reporter()) return Promise.resolve();
    taking ??= (async () => {
      await lease?.release();
      lease = undefined;
      // Three samples long: a reporter that dies is replaced within half a minute by default.
      lease = await takeLease(store, `${namespace}reporter`, 3 * intervalMs, 'status reporter', now);
    })().finally(() => (taking = undefined));
    return taking;
  }

  async function gaugesNow(): Promise<Record<string, GaugeSample>> {
    const instance = options.instanceId ?? (await defaultInstanceId());
    const gauges: Record<string, GaugeSample> = {};
    for (const { instance: name, scope, ...reading } of await readBacklogs()) {
      // A handler given another instanceId still writes under it; the fleet's once, under `fleet`.
      gauges[scope === 'fleet' ? 'fleet' : name === instance ? instance : `${instance}/${name}`] = reading;
    }
    return gauges;
  }

  function gained(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { metric, labels, value } of counterValues()) {
      const key = countKey(metric, labels);
      const increase = value - (sent.get(key) ?? 0);
      if (increase > 0) counts[key] = increase;
      sent.set(key, value);
    }
    return counts;
  }

  /** Counts taken for a sample that was not written go back, for the next sample to add. */
  function giveBack(counts: Record<string, number>): void {
    for (const [key, increase] of Object.entries(counts)) sent.set(key, (sent.get(key) ?? 0) - increase);
  }

  async function sample(): Promise<void> {
    await holdLease();
    const counts = gained();
    try {
      await write(counts, await gaugesNow());
    } catch (error) {
      giveBack(counts);
      throw error;
    }
  }

  async function write(counts: Record<string, number>, gauges: Record<string, GaugeSample>): Promise<void> {
    for (let attempt = 0; attempt < WRITE_TRIES; attempt++) {
      const old = await store.get(seriesKey);
      const text = JSON.stringify(addSample(parseSeries(old), now(), { counts, gauges }));
      const written =
        old === undefined
          ? await store.setIfAbsent(seriesKey, text, SERIES_TTL_MS)
          : await store.compareAndSet(seriesKey, old, text, SERIES_TTL_MS);
      if (written) return;
      // Stryker disable next-line ArithmeticOperator: how long apart changes no outcome, only how often writers meet
      await sleep(Math.random() * 50 * (attempt + 1));
    }
    throw new DeviceRiskError(ERR_STORE_UNAVAILABLE, statusMessages.seriesContended(WRITE_TRIES), {
      operation: 'store',
    });
  }

  /** A tick while the last sample still runs (a slow store) is skipped, not stacked. */
  let sampling = false;
  const tick = () => {
    if (sampling) return;
    sampling = true;
    void sample()
      .catch(onError)
      .finally(() => (sampling = false));
  };
  // The monitor never keeps a process alive.
  const timer = unrefd(setInterval(tick, intervalMs));
  tick();

  return {
    readings: readBacklogs,
    series: async () => parseSeries(await store.get(seriesKey)),
    get reporter() {
      return reporter();
    },
    sample,
    async close() {
      clearInterval(timer);
      await taking;
      reportFleetFiguresWhen(() => true);
      await lease?.release();
    },
  };
}
