/**
 * The status page's HTML: the figures now, and a chart of each over the last hour (minute
 * buckets) and the last day (quarter-hour buckets), from the time series. Self-contained: no
 * script, no stylesheet or font from elsewhere; it holds counts and gauges only, never a
 * reference, an address or a secret (docs/operating.md#metrics-and-the-status-page).
 */
import { chart, escapeHtml, type Line } from './chart.js';
import type { QueueEvent, UpstreamResult } from './names.js';
import {
  fleetGauges,
  MINUTE_BUCKETS,
  MINUTE_MS,
  QUARTER_BUCKETS,
  QUARTER_MS,
  type Bucket,
  type GaugeSample,
  type Series,
} from './series.js';

/** The queue's events the status page charts: its stale drops and the refusals (names.ts's QUEUE_EVENTS). */
const REFUSALS: readonly QueueEvent[] = ['stale', 'refused', 'service_refused'];
/** The service's result the page charts by operation: its refusals for the tenant's limit (names.ts's UPSTREAM_RESULTS). */
const SERVICE_REFUSED: UpstreamResult = 'http_429';

interface PageFinding {
  id: string;
  status: 'pass' | 'warn' | 'fail';
  message: string;
  fix: string;
}

export interface PageInput {
  at: number;
  instance: string;
  reporter: boolean;
  series: Series;
  /** The page's own URL the doctor checks, when it is set up. */
  doctorUrl?: string;
  doctor?: { url: string; ok: boolean; findings: PageFinding[] };
  /** The caller's own [label, value] rows after the fleet's figures (StatusHandlerOptions.figures). */
  figures?: ReadonlyArray<readonly [string, string]>;
}

/** A range's slots, oldest first, ending with the one `at` falls in. */
function slotsOf(buckets: Bucket[], at: number, slotMs: number, count: number) {
  const last = Math.floor(at / slotMs) * slotMs;
  const first = last - (count - 1) * slotMs;
  const byStart = new Map(buckets.map((bucket) => [bucket.start, bucket]));
  return { first, slotMs, buckets: Array.from({ length: count }, (_, i) => byStart.get(first + i * slotMs)) };
}

type Slots = ReturnType<typeof slotsOf>;

const gaugeLine = (slots: Slots, name: string, field: keyof GaugeSample, scale = 1): Line => ({
  name,
  values: slots.buckets.map((bucket) => {
    const value = bucket && fleetGauges(bucket)?.[field];
    return value === undefined ? undefined : value / scale;
  }),
});

/** Counter increases per slot of `metric`, one line per value of `by`, where `where` holds. */
function countLines(
  slots: Slots,
  metric: string,
  by: string,
  where: (labels: Record<string, string>) => boolean = () => true,
): Line[] {
  const lines = new Map<string, (number | undefined)[]>();
  slots.buckets.forEach((bucket, i) => {
    for (const [key, value] of Object.entries(bucket?.counts ?? {})) {
      const [name, labelText = ''] = key.split('|');
      if (name !== metric) continue;
      const labels = Object.fromEntries(labelText.split(',').map((pair) => pair.split('=') as [string, string]));
      if (!where(labels)) continue;
      const line = lines.get(labels[by] ?? '') ?? slots.buckets.map((b) => (b ? 0 : undefined));
      line[i] = (line[i] ?? 0) + value;
      lines.set(labels[by] ?? '', line);
    }
  });
  return [...lines].sort(([a], [b]) => a.localeCompare(b)).map(([name, values]) => ({ name, values }));
}

function charts(slots: Slots, per: string): string[] {
  const at = (title: string, unit: string, lines: Line[]) => chart(title, unit, slots.first, slots.slotMs, lines);
  return [
    at('Checks waiting', 'checks', [gaugeLine(slots, 'queued', 'queued')]),
    at('Trust bound', 'seconds', [
      gaugeLine(slots, 'time left', 'timeLeftMs', 1000),
      gaugeLine(slots, 'oldest age', 'oldestAgeMs', 1000),
    ]),
    at('Drain and need', 'checks a second', [
      gaugeLine(slots, 'drained', 'drainPerSecond'),
      gaugeLine(slots, 'needed in time', 'neededPerSecond'),
    ]),
    at(
      'Stale drops and queue refusals',
      per,
      countLines(slots, 'queue', 'event', (l) => REFUSALS.includes(l.event as QueueEvent)),
    ),
    at(
      "The service's refusals (429)",
      per,
      countLines(slots, 'upstream', 'operation', (l) => l.result === SERVICE_REFUSED),
    ),
    at('Capture outcomes', per, countLines(slots, 'outcomes', 'outcome')),
    at('Capture outcomes by engine', per, countLines(slots, 'outcomes', 'engine')),
    at('Decisions', per, countLines(slots, 'decisions', 'type')),
    at('First-party proxy', `answers ${per}`, countLines(slots, 'proxy', 'result')),
  ];
}

const seconds = (ms: number | undefined) => (ms === undefined ? '–' : `${Math.round(ms / 1000)} s`);
const rate = (value: number) => `${+value.toFixed(2)} /s`;

const table = (rows: ReadonlyArray<readonly [string, string]>) =>
  `<table class="now">${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('')}</table>`;

/** The fleet's figures at the last samples (every instance's gauges, the shared queue's once), then the caller's. */
function latest(series: Series, figures: ReadonlyArray<readonly [string, string]> = []): string {
  const [last, previous] = [series.minutes.at(-1), series.minutes.at(-2)];
  // Early in a minute some writers have not sampled into it yet: their reading of the minute before stands.
  const g = last && fleetGauges({ ...last, gauges: { ...(previous?.gauges ?? {}), ...last.gauges } });
  if (!last || !g) return `<p>No sample yet.</p>${figures.length > 0 ? table(figures) : ''}`;
  const rows: (readonly [string, string])[] = [
    ['Checks waiting', String(g.queued)],
    ['Oldest waiting', seconds(g.oldestAgeMs)],
    ['Time left to the trust bound', seconds(g.timeLeftMs)],
    ['Drain rate (stale drops apart)', rate(g.drainPerSecond)],
    ['Stale drops, last minute', String(g.staleLastMinute)],
    ['Account requests a second needed to check every accepted checkout in time', rate(g.neededPerSecond)],
    ...figures,
  ];
  return table(rows);
}

function doctorSection(input: PageInput): string {
  if (!input.doctorUrl) return '';
  const report = input.doctor
    ? `<p>${input.doctor.ok ? 'No check failed' : 'Some checks failed'} for ${escapeHtml(input.doctor.url)}:</p>
<table class="doctor"><tr><th>check</th><th>result</th><th>seen</th><th>fix</th></tr>${input.doctor.findings
        .map(
          (f) =>
            `<tr class="${f.status}"><td>${escapeHtml(f.id)}</td><td>${f.status}</td><td>${escapeHtml(f.message)}</td><td>${escapeHtml(f.fix)}</td></tr>`,
        )
        .join('')}</table>`
    : '';
  return `<section><h2>The doctor</h2><form method="get"><input type="hidden" name="doctor" value="run"><button>Run the doctor's checks on ${escapeHtml(input.doctorUrl)}</button></form>${report}</section>`;
}

const STYLE = `body{font:14px system-ui,sans-serif;margin:1.5em;color:#111}h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}
.grid{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0;border:1px solid #e5e7eb;padding:6px}figcaption{font-weight:600}
svg text{font-size:10px;fill:#4b5563}.legend{font-size:12px}.key i{display:inline-block;width:10px;height:10px;margin:0 3px 0 8px}
table{border-collapse:collapse}th,td{border:1px solid #e5e7eb;padding:3px 8px;text-align:left}.fail td{background:#fee2e2}.warn td{background:#fef9c3}`;

export function statusPage(input: PageInput): string {
  const hour = slotsOf(input.series.minutes, input.at, MINUTE_MS, MINUTE_BUCKETS);
  const day = slotsOf(input.series.quarters, input.at, QUARTER_MS, QUARTER_BUCKETS);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>blackbox-capture status</title><style>${STYLE}</style></head>
<body><h1>blackbox-capture status</h1>
<p>${escapeHtml(new Date(input.at).toISOString())}, from instance ${escapeHtml(input.instance)}${input.reporter ? " (the fleet's reporter)" : ''}.</p>
${latest(input.series, input.figures)}
<h2>The last hour</h2><div class="grid">${charts(hour, 'a minute').join('\n')}</div>
<h2>The last day</h2><div class="grid">${charts(day, 'a quarter hour').join('\n')}</div>
${doctorSection(input)}
</body></html>`;
}
