// @vitest-environment happy-dom
// diagnose() in the page (src/doctor/diagnose.ts) sends no leak check: a page can set no
// Cookie header, so the check is the command's (test/doctor/leaks.test.ts). The page's
// checks in a browser: e2e/diagnose.spec.ts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { diagnose } from '../../src/doctor/diagnose.js';

afterEach(() => vi.unstubAllGlobals());

describe('diagnose() in the page', () => {
  it('ignores collectorUrl: no marked request, no inspection, no leak finding', async () => {
    const asked: string[] = [];
    vi.stubGlobal('fetch', async (input: string | URL | Request) => {
      const url = input instanceof Request ? input.url : String(input);
      asked.push(url);
      if (url.endsWith('.js') || url.includes('.js?'))
        return new Response('/* script */', {
          headers: { 'content-type': 'text/javascript', 'cache-control': 'no-store' },
        });
      if (url.includes('/__bbc/')) return new Response(JSON.stringify({ headers: {} }));
      return new Response('<!doctype html><p>shop</p>', { headers: { 'content-type': 'text/html' } });
    });
    const report = await diagnose({ collectorUrl: 'https://collector.test/', loaderUrl: '/loader.js' });
    expect(asked.filter((url) => url.includes('bbc-doctor') || url.includes('/__bbc/'))).toEqual([]);
    expect(report.findings.filter((f) => f.id.startsWith('leak_'))).toEqual([]);
    expect(asked).toContain(`${location.origin}/iojs/general5/dyn_wdp.js`);
  });
});
