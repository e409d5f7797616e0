// The two handlers of blackbox-capture/server/status as a shop mounts them.
import { createServer } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { runDoctor } from '../../../src/doctor/doctor.js';
import { resolveAll } from '../../../src/doctor/resolve.js';
import { recordQueue } from '../../../src/server/metrics.js';
import { createMetricsHandler, createStatusHandler, createStatusMonitor } from '../../../src/server/status/index.js';

const monitor = createStatusMonitor({ sampleIntervalMs: 60_000 });
afterAll(() => monitor.close());

describe('createMetricsHandler', () => {
  const metrics = createMetricsHandler({ monitor });

  it('answers the Prometheus text format', async () => {
    recordQueue('accepted');
    const answer = await metrics(new Request('http://admin/metrics'));
    expect(answer.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(await answer.text()).toMatch(/^blackbox_capture_queue_checks_total\{event="accepted"\} \d+$/m);
  });

  it('refuses anything but GET and HEAD, with a code', async () => {
    const answer = await metrics(new Request('http://admin/metrics', { method: 'POST' }));
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('GET, HEAD');
    expect(await answer.json()).toMatchObject({ error: 'method_not_allowed' });
    expect(await (await metrics(new Request('http://admin/metrics', { method: 'HEAD' }))).text()).toBe('');
  });

  it('refuses to be made without a monitor', () => {
    expect(() => createMetricsHandler({} as never)).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
    expect(() => createStatusHandler({} as never)).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
  });
});

describe('createStatusHandler', () => {
  it('answers the page with a policy that allows nothing from elsewhere', async () => {
    await monitor.sample();
    const answer = await createStatusHandler({ monitor, instanceId: 'pod-1' })(new Request('http://admin/status'));
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(answer.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(await answer.text()).toContain('from instance pod-1');
  });

  it("reads the caller's figures on each request and shows them", async () => {
    let depth = 2;
    const handler = createStatusHandler({ monitor, figures: async () => [['Decisions not delivered', String(depth)]] });
    const page = async () => (await handler(new Request('http://admin/status'))).text();
    expect(await page()).toContain('<tr><th>Decisions not delivered</th><td>2</td></tr>');
    depth = 0;
    expect(await page()).toContain('<tr><th>Decisions not delivered</th><td>0</td></tr>');
    expect(await (await createStatusHandler({ monitor })(new Request('http://admin/status'))).text()).not.toContain(
      'Decisions not delivered',
    );
  });

  it('has no doctor unless given its URL, and refuses a URL that is none', async () => {
    const answer = await createStatusHandler({ monitor })(new Request('http://admin/status?doctor=run'));
    expect(answer.status).toBe(404);
    expect(await answer.json()).toMatchObject({ error: 'doctor_not_set_up' });
    expect(() => createStatusHandler({ monitor, doctor: { url: 'checkout' } })).toThrow(
      expect.objectContaining({ code: 'invalid_configuration' }),
    );
  });

  describe('the doctor', () => {
    // A checkout page whose first-party scripts answer HTML: the classic unstripped prefix.
    const site = createServer((request, response) => {
      response.setHeader('content-type', 'text/html');
      response.end(
        request.url === '/checkout'
          ? '<script src="/iojs/loader.js" data-loader-url="/iojs/loader.js"></script>'
          : '<html>fallback</html>',
      );
    });
    const listening = new Promise<string>((resolve) =>
      site.listen(0, '127.0.0.1', () =>
        resolve(`http://127.0.0.1:${(site.address() as { port: number }).port}/checkout`),
      ),
    );
    afterAll(() => site.close());

    it('runs the command’s checks on the given URL, with the same findings', async () => {
      const url = await listening;
      const status = createStatusHandler({ monitor, doctor: { url } });
      const html = await (
        await status(new Request('http://admin/status?doctor=run&url=http://169.254.169.254/'))
      ).text();
      const report = await runDoctor(url, { lookup: resolveAll });
      expect(report.findings.some((f) => f.status === 'fail')).toBe(true);
      for (const finding of report.findings)
        expect(html).toContain(`<tr class="${finding.status}"><td>${finding.id}</td>`);
      // The URL is the option's, never the request's.
      expect(html).not.toContain('169.254.169.254');
    });
  });
});
