/**
 * The browser tests' `test`: Playwright's, with one page per worker, reused from test to test
 * and reset between them, instead of a new browser context for each test. A new context and
 * page cost Debian's Chromium about 0.7 s of a core each (measured: a capture on a fresh
 * context 1.2 s, on the reused page 0.45 s): on two cores, that was a fifth of the browser
 * step.
 *
 * What a fresh context would give a test, the reset gives it too: a blank document, an empty
 * HTTP cache, no cookies and no site data, no routes, no listeners the test added, the default
 * viewport. What cannot be undone (an init script, an exposed function, a second page, a
 * context-wide setting) marks the page used: the next test gets a new context.
 */
import { test as base, expect, type BrowserContext, type CDPSession, type Page } from '@playwright/test';

export { expect };

/** Page and context methods whose effect outlives the document: after one, the context is not reused. */
const LASTING = {
  page: ['addInitScript', 'exposeFunction', 'exposeBinding', 'setExtraHTTPHeaders', 'emulateMedia'],
  context: [
    'addInitScript',
    'exposeFunction',
    'exposeBinding',
    'setExtraHTTPHeaders',
    'grantPermissions',
    'setGeolocation',
    'setOffline',
    'setHTTPCredentials',
    'addCookies',
    'newPage',
  ],
} as const;

interface Shared {
  context: BrowserContext;
  page: Page;
  cdp: CDPSession;
  /** Origins the page has loaded anything from: their site data is cleared after each test. */
  origins: Set<string>;
  lasting: boolean;
}

async function open(browser: import('@playwright/test').Browser): Promise<Shared> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const shared: Shared = { context, page, cdp: await context.newCDPSession(page), origins: new Set(), lasting: false };
  context.on('request', (request) => {
    const { origin } = new URL(request.url());
    if (origin.startsWith('http')) shared.origins.add(origin);
  });
  for (const [target, names] of [
    [page, LASTING.page],
    [context, LASTING.context],
  ] as const) {
    for (const name of names) {
      const original = (target as unknown as Record<string, (...args: unknown[]) => unknown>)[name]!.bind(target);
      (target as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        shared.lasting = true;
        return original(...args);
      };
    }
  }
  return shared;
}

type Listener = (...args: any[]) => unknown;
/** Page and BrowserContext are event emitters at run time; their typings leave these out. */
interface Emitter {
  eventNames(): Array<string | symbol>;
  listeners(event: string | symbol): Listener[];
  off(event: string | symbol, listener: Listener): unknown;
}
type Snapshot = Map<string | symbol, Listener[]>;
interface Listeners {
  page: Snapshot;
  context: Snapshot;
}
const asEmitter = (target: Page | BrowserContext) => target as unknown as Emitter;

function snapshot(target: Page | BrowserContext): Snapshot {
  const emitter = asEmitter(target);
  return new Map(emitter.eventNames().map((event) => [event, [...emitter.listeners(event)]]));
}

/** Removes the listeners added since `before`: the test's, never Playwright's own. */
function removeAdded(target: Page | BrowserContext, before: Snapshot) {
  const emitter = asEmitter(target);
  for (const event of emitter.eventNames()) {
    const kept = before.get(event) ?? [];
    for (const listener of emitter.listeners(event)) if (!kept.includes(listener)) emitter.off(event, listener);
  }
}

/** Back to what a new context holds; false when that is not possible (the caller opens a new one). */
async function reset(
  shared: Shared,
  listeners: Listeners,
  viewport: { width: number; height: number } | null,
): Promise<boolean> {
  const { page, context, cdp } = shared;
  if (shared.lasting || page.isClosed() || context.pages().length !== 1) return false;
  removeAdded(page, listeners.page);
  removeAdded(context, listeners.context);
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await context.unrouteAll({ behavior: 'ignoreErrors' });
  await page.goto('about:blank');
  if (viewport) await page.setViewportSize(viewport);
  await cdp.send('Network.clearBrowserCache');
  // 'all': cookies, local and session storage, IndexedDB, cache storage, service workers.
  for (const origin of shared.origins) await cdp.send('Storage.clearDataForOrigin', { origin, storageTypes: 'all' });
  shared.origins.clear();
  return true;
}

export const test = base.extend<Record<never, never>, { shared: { current?: Shared } }>({
  shared: [
    async ({}, use) => {
      const holder: { current?: Shared } = {};
      await use(holder);
      await holder.current?.context.close();
    },
    { scope: 'worker' },
  ],
  context: async ({ browser, shared }, use) => {
    shared.current ??= await open(browser);
    await use(shared.current.context);
  },
  page: async ({ context, shared }, use) => {
    const current = shared.current!;
    const { page } = current;
    const listeners = { page: snapshot(page), context: snapshot(context) };
    const viewport = page.viewportSize();
    await use(page);
    if (!(await reset(current, listeners, viewport).catch(() => false))) {
      shared.current = undefined;
      await context.close().catch(() => undefined);
    }
  },
});
