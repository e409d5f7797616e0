// The admin listener's metrics: the kit's, then the outbox's gauges; an outbox whose store does
// not answer within FIGURES_MS leaves its gauges out (never a made-up 0) and holds no scrape.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { adminRoutes } from '../../src/gateway/extra-routes.js';
import type { Outbox } from '../../src/gateway/outbox.js';
import { createStatusMonitor } from '../../src/server/status/index.js';

afterEach(() => {
  vi.useRealTimers();
});

/** The /metrics handler over an outbox whose figures are `figures()`. */
function metrics(figures: Outbox['figures']) {
  const outbox = { figures } as unknown as Outbox;
  const monitor = createStatusMonitor();
  const route = adminRoutes(monitor, outbox, () => false).find((r) => r.path === '/metrics')!;
  return { scrape: async () => route.handler(new Request('http://127.0.0.1/metrics')), monitor };
}

describe('GET /metrics on the admin listener', () => {
  it("has the outbox's depth and oldest age after the kit's figures", async () => {
    const { scrape, monitor } = metrics(async () => ({ depth: 3, oldestAt: Date.now() - 61_000 }));
    try {
      const text = await (await scrape()).text();
      expect(text).toMatch(/^blackbox_capture_gateway_outbox_depth 3$/m);
      expect(text).toMatch(/^blackbox_capture_gateway_outbox_oldest_undelivered_seconds 6[12]$/m);
    } finally {
      await monitor.close();
    }
  });

  it('leaves the gauges out when the outbox does not answer within 2 s, and answers then', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { scrape, monitor } = metrics(() => new Promise(() => {}));
    try {
      let text: string | undefined;
      const scraped = scrape().then(async (answer) => (text = await answer.text()));
      await vi.advanceTimersByTimeAsync(1999);
      expect(text).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      await scraped;
      expect(text).toBeDefined();
      expect(text).not.toMatch(/outbox/);
    } finally {
      await monitor.close();
    }
  });

  it('leaves the gauges out when the outbox fails', async () => {
    const { scrape, monitor } = metrics(() => Promise.reject(new Error('store away')));
    try {
      expect(await (await scrape()).text()).not.toMatch(/outbox/);
    } finally {
      await monitor.close();
    }
  });
});
