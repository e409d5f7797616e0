import { describe, expect, it } from 'vitest';
import { chart } from '../../../src/server/status/chart.js';
import { statusPage } from '../../../src/server/status/page.js';
import { addSample, emptySeries, MINUTE_MS } from '../../../src/server/status/series.js';

const at = Date.UTC(2026, 10, 27, 8, 30);
const gauges = (queued: number, timeLeftMs: number) => ({
  fleet: {
    queued,
    oldestAgeMs: 90_000 - timeLeftMs,
    timeLeftMs,
    drainPerSecond: 1,
    staleLastMinute: 0,
    neededPerSecond: 4,
  },
});

describe('statusPage', () => {
  const series = [10, 40, 80].reduce(
    (s, queued, i) =>
      addSample(s, at - (2 - i) * MINUTE_MS, {
        counts: {
          'outcomes|outcome=complete,engine=firefox': 3,
          'upstream|operation=account create,result=http_429': 1,
          'upstream|operation=finalize,result=ok': 2,
        },
        gauges: gauges(queued, 80_000 - i * 20_000),
      }),
    emptySeries(),
  );

  it("adds the caller's figures to the first table, escaped, with or without a sample", () => {
    const figures = [['Decisions not delivered', '2, <the oldest> 40 s old']] as const;
    const row = '<tr><th>Decisions not delivered</th><td>2, &lt;the oldest&gt; 40 s old</td></tr>';
    expect(statusPage({ at, instance: 'pod-1', reporter: true, series, figures })).toMatch(
      new RegExp(`<table class="now"><tr><th>Checks waiting</th>(?:(?!</table>).)*${row}</table>`),
    );
    expect(statusPage({ at, instance: 'pod-1', reporter: true, series: emptySeries(), figures })).toContain(
      `<p>No sample yet.</p><table class="now">${row}</table>`,
    );
    expect(statusPage({ at, instance: 'pod-1', reporter: true, series: emptySeries() })).not.toContain('<table');
  });

  it('shows the figures at the last sample, and a chart of each over the hour and the day', () => {
    const html = statusPage({ at, instance: 'pod-1', reporter: true, series });
    expect(html).toContain('<th>Checks waiting</th><td>80</td>');
    expect(html).toContain('<th>Time left to the trust bound</th><td>40 s</td>');
    expect(html.match(/<svg /g)).toHaveLength(18);
    expect(html).toContain('firefox');
    expect(html).toContain('account create');
    // The service's refusals by operation: a call it answered is no refusal.
    expect(html).not.toContain('finalize');
    // Self-contained: no script, nothing loaded from elsewhere.
    expect(html).not.toMatch(/<script|<link|src=|https?:\/\//);
  });

  it('escapes every text it did not write', () => {
    const hostile = addSample(emptySeries(), at, {
      counts: { 'outcomes|outcome=<img src=x>,engine=x': 1 },
      gauges: {},
    });
    const html = statusPage({ at, instance: '<b>pod</b>', reporter: false, series: hostile });
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>pod');
    expect(html).toContain('&lt;b&gt;pod');
    expect(html).toContain('No sample yet');
  });

  it('lists the doctor’s findings when it ran', () => {
    const html = statusPage({
      at,
      instance: 'pod-1',
      reporter: true,
      series,
      doctorUrl: 'https://shop.example/checkout',
      doctor: {
        url: 'https://shop.example/checkout',
        ok: false,
        findings: [{ id: 'static_script', status: 'fail', message: 'HTML, not JavaScript', fix: 'strip the prefix' }],
      },
    });
    expect(html).toContain('<tr class="fail"><td>static_script</td>');
    expect(html).toContain('Some checks failed');
  });
});

describe('chart', () => {
  it('draws a line through neighbours, a dot for a lone value, a gap where nothing was sampled', () => {
    const svg = chart('t', 'u', 0, MINUTE_MS, [{ name: 'a', values: [1, 2, undefined, 3, undefined] }]);
    expect(svg).toMatch(/d="M[\d.]+ [\d.]+L[\d.]+ [\d.]+M[\d.]+ [\d.]+"/);
    expect(svg.match(/<circle/g)).toHaveLength(1);
  });
});
