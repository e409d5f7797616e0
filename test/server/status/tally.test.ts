// This process's counters, as the kit's parts add to them (src/server/metrics.ts): the page's
// outcome with its engine, a decision told, the proxy's answers.
import { describe, expect, it } from 'vitest';
import { recordDecision, recordOutcome, recordProxy } from '../../../src/server/metrics.js';
import { createFirstPartyProxy } from '../../../src/server/proxy/proxy.js';
import { count, counterValues } from '../../../src/server/status/tally.js';

const valueOf = (metric: string, labels: Record<string, string>) =>
  counterValues().find((c) => c.metric === metric && JSON.stringify(c.labels) === JSON.stringify(labels))?.value ?? 0;

describe('the tally', () => {
  it('adds per metric and label set, and hands out copies', () => {
    count('repairs', { repair: 'tally-test' });
    count('repairs', { repair: 'tally-test' }, 2);
    expect(valueOf('repairs', { repair: 'tally-test' })).toBe(3);
    counterValues().find((c) => c.labels.repair === 'tally-test')!.value = 100;
    expect(valueOf('repairs', { repair: 'tally-test' })).toBe(3);
  });

  it("counts an outcome under its browser's engine, and a decision under its documented type", () => {
    const before = valueOf('outcomes', { outcome: 'degraded-first-party', engine: 'firefox' });
    recordOutcome(
      { outcome: 'degraded-first-party', scripts: [], durationMs: 3 },
      'Mozilla/5.0 (X11; rv:128.0) Gecko/20100101 Firefox/128.0',
    );
    expect(valueOf('outcomes', { outcome: 'degraded-first-party', engine: 'firefox' })).toBe(before + 1);
    const other = valueOf('decisions', { type: 'other' });
    recordDecision({ decision: { type: 'SOMETHING_NEW' } });
    recordDecision({});
    expect(valueOf('decisions', { type: 'other' })).toBe(other + 2);
  });

  it("counts the proxy's answers: the collector's status class, or its own failure", async () => {
    // Each class at its lower edge too: 500 is a 5xx, 400 a 4xx.
    const answers = [503, 200, 500, 400, 200].map((status) => new Response('x', { status }));
    const proxy = createFirstPartyProxy({
      prefix: '/iojs',
      collectorUrl: 'https://collector.test',
      fetch: async () => {
        const next = answers.shift();
        if (!next) throw new TypeError('fetch failed');
        return next;
      },
    });
    const results = ['http_5xx', 'ok', 'http_4xx', 'unreachable'];
    const before = results.map((result) => valueOf('proxy', { result }));
    for (let i = 0; i < 6; i++)
      await (await proxy(new Request('https://shop.test/iojs/general5/static_wdp.js'))).arrayBuffer();
    expect(results.map((result) => valueOf('proxy', { result }))).toEqual(before.map((n, i) => n + [2, 2, 1, 1][i]!));
    recordProxy('timeout');
    expect(valueOf('proxy', { result: 'timeout' })).toBeGreaterThan(0);
  });
});
