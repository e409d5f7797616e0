/**
 * Serves the emulated vendor origins inside happy-dom, without sockets: script
 * tags load the same loader and collection scripts the emulator serves, and
 * tests can override any URL to simulate 404s, HTML fallbacks or blocked hosts.
 */
import { beforeEach, vi } from 'vitest';
import { vendorAsset, type VendorAsset, type VendorSettings } from '../../src/emulator/scripts/routes.js';
import { realLoaderSource } from './real-loader.mjs';

export const PAGE = 'https://shop.test';
export const LOADER_URL = 'https://vendor.test/loader.js';
export const TP_HOST = 'https://tp.test';

type Override = VendorAsset | 'network-error';
const overrides: Array<[RegExp, Override]> = [];
export const requests: string[] = [];
export const settings: VendorSettings = { defaultTpHost: TP_HOST, delays: {} };

/**
 * The loaders a behaviour is checked with, for `describe.each`: the emulator's, and the
 * vendor's real 5.2.2, the reference (its source, extracted at run time).
 */
export const loaders = (): Array<[name: string, loaderSource: string | undefined]> => [
  ['emulated loader', undefined],
  ['real loader 5.2.2', realLoaderSource()],
];

/** In a suite of `describe.each(loaders())`: its pages load that suite's loader (set after the file's freshPage()). */
export function serveLoader(loaderSource: string | undefined): void {
  beforeEach(() => {
    if (loaderSource !== undefined) settings.loaderSource = loaderSource;
  });
}

/** Answer URLs matching `pattern` with `answer` until reset. */
export function override(pattern: RegExp, answer: Override): void {
  overrides.unshift([pattern, answer]);
}
/** Drops every override (the page and the package state stay). */
export function clearOverrides(): void {
  overrides.length = 0;
}
export const html = (body = '<!doctype html><html><body>SPA fallback</body></html>'): VendorAsset => ({
  status: 200,
  headers: { 'content-type': 'text/html' },
  body,
});
export const notFound: VendorAsset = { status: 404, headers: { 'content-type': 'text/plain' }, body: 'not found' };

function answer(url: URL, header: (name: string) => string | null): Override {
  const hit = overrides.find(([pattern]) => pattern.test(url.href));
  if (hit) return hit[1];
  if (url.origin === 'https://vendor.test') return vendorAsset('loader', url.pathname, header, settings);
  if (url.origin === TP_HOST) return vendorAsset('thirdParty', url.pathname, header, settings);
  if (url.origin === PAGE && url.pathname.startsWith('/iojs/')) {
    // The first-party reverse proxy: strip the prefix, forward to the collector.
    return vendorAsset('collector', url.pathname.slice('/iojs'.length), header, settings);
  }
  return notFound;
}

/**
 * happy-dom logs every script that fails to load, stack and all, on the worker's own console
 * (it keeps the console it was created with); these tests break proxies and block hosts on
 * purpose. Only those lines are dropped (a DOMException for a failed request with status
 * 404), where they are written: any other output still prints.
 */
function quietExpected404s(): void {
  const stream = process.stderr as NodeJS.WriteStream & { quiet?: boolean };
  if (stream.quiet) return;
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  stream.quiet = true;
  stream.write = (chunk: unknown, ...rest: unknown[]) =>
    /^DOMException: Failed to perform request to "[^"\n]+"\. Status 404\b/.test(String(chunk))
      ? true
      : write(chunk, ...rest);
}

/** Installs the interceptor on the current happy-dom window. */
export function installVendor(): void {
  quietExpected404s();
  const w = window as unknown as {
    happyDOM: { settings: { fetch: { interceptor: unknown } } };
    Headers: typeof Headers;
    Response: typeof Response;
  };
  w.happyDOM.settings.fetch.interceptor = {
    beforeSyncRequest({ request }: { request: Request }) {
      requests.push(request.url);
      const a = answer(new URL(request.url), (n) => request.headers.get(n));
      if (a === 'network-error') throw new TypeError('Failed to fetch');
      return {
        status: a.status,
        statusText: a.status === 200 ? 'OK' : 'Error',
        ok: a.status >= 200 && a.status < 300,
        url: request.url,
        redirected: false,
        headers: new w.Headers(a.headers),
        body: Buffer.from(a.body),
      };
    },
    async beforeAsyncRequest({ request }: { request: Request }) {
      requests.push(request.url);
      const a = answer(new URL(request.url), (n) => request.headers.get(n));
      if (a === 'network-error') throw new TypeError('Failed to fetch');
      return new w.Response(a.body, { status: a.status, headers: a.headers });
    },
  };
}

/** A capture's options at their plainest: the vendor's loader, nothing else. */
export const ok = { loaderUrl: LOADER_URL };
/** The vendor's loader unreachable: 404. */
export const breakLoader = () => override(/loader\.js/, notFound);
/** The vendor's loader answering `body` as its script. */
export const loaderScript = (body: string) =>
  override(/^https:\/\/vendor\.test\/loader\.js/, {
    status: 200,
    headers: { 'content-type': 'text/javascript' },
    body,
  });
/** The third party's host unreachable: its scripts 404 (a blocker's doing). */
export const blockThirdParty = () => override(/^https:\/\/tp\.test\//, notFound);
/** The first-party proxy broken: everything under /iojs/ 404s. */
export const breakProxy = () => override(/^https:\/\/shop\.test\/iojs\//, notFound);

/** A clean page and a fresh copy of the package (its per-page state included). */
export async function freshPage(): Promise<typeof import('../../src/browser/index.js')> {
  clearOverrides();
  requests.length = 0;
  settings.delays = {};
  delete settings.loaderSource;
  const w = window as unknown as Record<string, unknown>;
  for (const key of Object.keys(w))
    if (key === 'io_global_object_name' || /^(IGLOO|CUSTOM\w*)$/.test(key)) delete w[key];
  // The checkout that owns the page run's blackbox and the one it was reloaded for
  // (src/browser/checkout.ts): a new page has none, nor a reload recorded for the next;
  // nor the loader tag a copy of the package added (src/browser/warnings.ts).
  for (const mark of ['checkout', 'reloaded', 'injected'])
    delete (window as unknown as Record<symbol, unknown>)[Symbol.for(`blackbox-capture.${mark}`)];
  sessionStorage.removeItem('blackbox-capture.reload');
  // A well-set-up page: the development build warns of a cross-origin loader without a hint.
  document.head.innerHTML = `<link rel="preconnect" href="${new URL(LOADER_URL).origin}">`;
  document.body.innerHTML = '';
  installVendor();
  vi.resetModules();
  return import('../../src/browser/index.js');
}

/** Every script tag whose src starts with `prefix`. */
export const scriptsFor = (prefix: string) =>
  Array.from(document.querySelectorAll<HTMLScriptElement>('script[src]')).filter((s) => s.src.startsWith(prefix));

/** The page's window, for the vendor's globals. */
export const w = () => window as unknown as Record<string, any>;
/** The rejection of a promise that must reject (a resolution fails the test). */
export const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: any) => e,
  );
/** The `code` of what `run` throws; `otherwise` when it returns. */
export const thrownCode = (run: () => unknown, otherwise: string): string => {
  try {
    run();
    return otherwise;
  } catch (error) {
    return (error as { code: string }).code;
  }
};
/** The page's own loader tag, as a page that runs the loader itself writes it. */
export function pageLoaderTag(): HTMLScriptElement {
  const tag = document.createElement('script');
  tag.src = LOADER_URL;
  document.head.append(tag);
  return tag;
}
