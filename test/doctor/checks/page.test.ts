// The page check on its own (src/doctor/checks/page.ts): the page must answer HTML; it is read
// up to a cap, and what was read (with the headers) is handed to the other checks.
import { describe, expect, it } from 'vitest';
import { checkPage } from '../../../src/doctor/checks/page.js';
import { fakeGet, recorder } from '../../support/doctor-checks.js';

const PAGE = new URL('https://shop.test/checkout');

async function page(answer: Response | Error, maxPageBytes = 1024) {
  const { add, findings } = recorder();
  const { get } = fakeGet({ [PAGE.href]: answer });
  const read = await checkPage(get, add, PAGE, maxPageBytes);
  return { ...read, findings };
}

describe('checkPage', () => {
  it('an HTML page passes; its HTML and headers are handed on', async () => {
    const { html, pageHeaders, findings } = await page(
      new Response('<p>pay</p>', {
        headers: { 'content-type': 'TEXT/HTML', 'content-security-policy': "script-src 'self'" },
      }),
    );
    expect(findings).toEqual([
      { id: 'page', status: 'pass', message: 'the page answered 200 with HTML', fix: undefined },
    ]);
    expect(html).toBe('<p>pay</p>');
    expect(pageHeaders.get('content-security-policy')).toBe("script-src 'self'");
  });

  it('a page over the cap is a warning; its start is still read', async () => {
    const { html, findings } = await page(
      new Response('<p>' + 'x'.repeat(2000), { headers: { 'content-type': 'text/html' } }),
      1000,
    );
    expect(findings).toEqual([
      expect.objectContaining({
        id: 'page',
        status: 'warn',
        message: 'the page is larger than 1000 bytes: only its start was read',
      }),
    ]);
    expect(html).toHaveLength(1000);
  });

  it.each([
    [
      'an error status',
      new Response('<p>', { status: 404, headers: { 'content-type': 'text/html' } }),
      'the page answered 404 text/html',
    ],
    [
      'no HTML',
      new Response('{}', { headers: { 'content-type': 'application/json' } }),
      'the page answered 200 application/json',
    ],
    ['no content type', new Response(null, { status: 200 }), 'the page answered 200 without a content type'],
  ])('%s fails', async (_, answer, message) => {
    const { findings, pageHeaders } = await page(answer);
    expect(findings).toEqual([expect.objectContaining({ id: 'page', status: 'fail', message })]);
    // What it answered is still read: the CSP of an error page is no less the page's.
    expect(pageHeaders).toBe(answer.headers);
  });

  it('a page that cannot be fetched fails with the reason; nothing is handed on', async () => {
    const { html, pageHeaders, findings } = await page(new Error('getaddrinfo ENOTFOUND shop.test'));
    expect(findings).toEqual([
      expect.objectContaining({
        id: 'page',
        status: 'fail',
        message: 'the page could not be fetched (getaddrinfo ENOTFOUND shop.test)',
      }),
    ]);
    expect(html).toBe('');
    expect([...pageHeaders]).toEqual([]);
  });
});
