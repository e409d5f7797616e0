/**
 * The reused page (support/test.ts) starts each test as a new context would: these tests run
 * in order in one worker; each later one checks that what the one before left is gone.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';

test.describe.configure({ mode: 'serial' });

let server: Server;
let origin: string;
let cachedFetches = 0;
const pages: Page[] = [];
const calls: string[] = [];

test.beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url === '/cached.js') {
      cachedFetches += 1;
      response.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'max-age=3600' });
      response.end('window.cachedRan = true;');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html', 'set-cookie': 'left=1; Path=/' });
    response.end('<!doctype html><title>isolation</title><script src="/cached.js"></script>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
test.afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

test('a test leaves a cookie, site data, a cached script, a route, a listener and a viewport', async ({ page }) => {
  pages.push(page);
  await page.goto(`${origin}/`);
  await page.evaluate(() => {
    localStorage.setItem('left', '1');
    sessionStorage.setItem('left', '1');
  });
  await page.route('**/routed', (route) => route.fulfill({ body: 'routed' }));
  page.on('console', () => calls.push('listener'));
  await page.setViewportSize({ width: 390, height: 500 });
  expect(cachedFetches).toBe(1);
  expect(await page.evaluate(() => fetch('/routed').then((r) => r.text()))).toBe('routed');
});

test('the next test, on the same page, finds none of it', async ({ page, context }) => {
  expect(page).toBe(pages[0]); // reused: otherwise this test proves nothing
  expect(page.url()).toBe('about:blank');
  expect(await context.cookies()).toEqual([]);
  expect(page.viewportSize()).toEqual({ width: 1280, height: 720 });
  await page.evaluate(() => console.log('no listener hears this'));
  expect(calls).toEqual([]);
  await page.goto(`${origin}/`);
  expect(cachedFetches).toBe(2); // fetched again: the HTTP cache was emptied
  expect(await page.evaluate(() => [localStorage.getItem('left'), sessionStorage.getItem('left')])).toEqual([
    null,
    null,
  ]);
  expect(await page.evaluate(() => fetch('/routed').then((r) => r.status))).toBe(200); // the server's page, not the route
  expect(await page.evaluate(() => fetch('/routed').then((r) => r.text()))).not.toBe('routed');
  // Something that cannot be undone: the next test must get a new page.
  await page.addInitScript(() => ((window as unknown as { initScriptRan: boolean }).initScriptRan = true));
});

test('after an init script, the next test gets a new context and page', async ({ page }) => {
  expect(page).not.toBe(pages[0]);
  await page.goto(`${origin}/`);
  expect(await page.evaluate(() => (window as unknown as { initScriptRan?: boolean }).initScriptRan)).toBeUndefined();
});
