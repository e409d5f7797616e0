/**
 * The emulated vendor origins: where the loader, the first-party collector (the
 * reverse proxy's upstream) and the third-party host answer. The core is a pure
 * function of path and headers so that test DOMs can serve it without a socket;
 * `createVendorHandlers` wraps it as web-standard Request -> Response handlers.
 */
import { randomBytes } from 'node:crypto';
import { BLACKBOX_PATTERN, BLACKBOX_PREFIX } from '../../shared/constants.js';
import { collectionScript, loaderScript, type CollectionSource } from './loader.js';

export type VendorRole = 'loader' | 'collector' | 'thirdParty';

export type CollectionDelays = Partial<Record<CollectionSource, readonly number[]>>;

export interface VendorSettings {
  /** Third-party origin the loader uses by default, e.g. http://127.0.0.1:4001. */
  defaultTpHost: string;
  /** Delays of each collection script's contributions, in ms. */
  delays?: CollectionDelays;
  /**
   * A loader to serve instead of the emulated one, e.g. the vendor's real loader 5.2.2 or a
   * newer file of yours. Its default third-party host is replaced by `defaultTpHost`.
   */
  loaderSource?: string;
}

const DEFAULT_DELAYS: Required<CollectionDelays> = {
  fp_static: [20],
  fp_dyn: [40, 80],
  tp: [30, 60],
  tp_static: [30],
  tp_dyn: [60],
};

export interface VendorAsset {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Versions the vendor serves: the two aliases and numeric versions (dashed with `url_dots_to_dashes`). */
export const SERVED_VERSION = /^(general5|early5|\d+\.\d+\.\d+|\d+-\d+-\d+)$/;
/** The real loader's default third-party host, replaced in a served `loaderSource`. */
const VENDOR_TP_HOST = 'https://mpsnare.iesnare.com';

const JS = 'text/javascript; charset=utf-8';

function notFound(what: string): VendorAsset {
  return { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: `not found: ${what}` };
}

/** `/{version}/{subkey}/{file}`; the subkey may be empty, and `//` may be collapsed. */
function parseCollectionPath(pathname: string): { version: string; file: string } | undefined {
  const match = /^\/([^/]+)\/(?:[^/]*\/)?([\w.-]+\.js)$/.exec(pathname);
  return match ? { version: match[1]!, file: match[2]! } : undefined;
}

/** The pure core: what a vendor origin answers for a GET of `pathname`. */
export function vendorAsset(
  role: VendorRole,
  pathname: string,
  header: (name: string) => string | null,
  settings: VendorSettings,
): VendorAsset {
  if (role === 'loader') {
    if (pathname !== '/loader.js') return notFound(pathname);
    return {
      status: 200,
      headers: { 'content-type': JS, 'cache-control': 'public, max-age=300' },
      body:
        settings.loaderSource === undefined
          ? loaderScript({ defaultTpHost: settings.defaultTpHost })
          : settings.loaderSource.split(VENDOR_TP_HOST).join(settings.defaultTpHost),
    };
  }
  const parsed = parseCollectionPath(pathname);
  if (!parsed || !SERVED_VERSION.test(parsed.version)) return notFound(pathname);
  const delays = { ...DEFAULT_DELAYS, ...settings.delays };
  let source: CollectionSource;
  if (role === 'collector') {
    if (parsed.file === 'static_wdp.js') source = 'fp_static';
    else if (parsed.file === 'dyn_wdp.js') source = 'fp_dyn';
    else return notFound(pathname);
  } else if (parsed.file === 'static_wdp.js') source = 'tp_static';
  else if (parsed.file === 'dyn_wdp.js') source = 'tp_dyn';
  else source = 'tp'; // wdp.js, or the resource a `tp_resource` names

  const dynamic = source === 'fp_dyn' || source === 'tp_dyn';
  const embedded: Record<string, string> = { version: parsed.version };
  if (dynamic) {
    // The dynamic script embeds per-request values: it must never be cached.
    embedded.ua = header('user-agent') ?? '';
    embedded.lang = header('accept-language') ?? '';
    embedded.token = randomBytes(12).toString('base64url');
  }
  return {
    status: 200,
    headers: {
      'content-type': JS,
      'cache-control': dynamic ? 'no-store' : 'public, max-age=300',
      // The first-party collector keeps a device cookie, which the proxy must pass back (docs/vendor-contract.md#the-first-party-front).
      ...(source === 'fp_dyn' ? { 'set-cookie': `fpc=${embedded.token}; Path=/; Max-Age=31536000; SameSite=Lax` } : {}),
    },
    body: collectionScript({
      source,
      delaysMs: delays[source],
      embedded,
      entropy: randomBytes(96).toString('base64'),
    }),
  };
}

export type Handler = (request: Request) => Promise<Response>;

/** The three vendor origins as web-standard handlers (GET and HEAD only). */
export function createVendorHandlers(settings: VendorSettings): Record<VendorRole, Handler> {
  const make =
    (role: VendorRole): Handler =>
    async (request) => {
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return new Response('method not allowed', { status: 405, headers: { allow: 'GET, HEAD' } });
      }
      const asset = vendorAsset(role, new URL(request.url).pathname, (n) => request.headers.get(n), settings);
      return new Response(request.method === 'HEAD' ? null : asset.body, {
        status: asset.status,
        headers: asset.headers,
      });
    };
  return { loader: make('loader'), collector: make('collector'), thirdParty: make('thirdParty') };
}

export interface DecodedBlackbox {
  /** Loader version that produced it. */
  loaderVersion: string;
  /** The collection sources that contributed, in order. */
  sources: CollectionSource[];
  /** Values embedded by the dynamic scripts (user agent, language, token). */
  embedded: Partial<Record<CollectionSource, Record<string, string>>>;
}

/** Reads an emulated blackbox; undefined when it is not one. */
export function decodeBlackbox(blackbox: string): DecodedBlackbox | undefined {
  if (!blackbox.startsWith(BLACKBOX_PREFIX) || !BLACKBOX_PATTERN.test(blackbox)) return undefined;
  try {
    const json = JSON.parse(Buffer.from(blackbox.slice(BLACKBOX_PREFIX.length), 'base64').toString('latin1')) as {
      v: string;
      s: CollectionSource[];
      p: Record<string, string>;
    };
    const embedded: DecodedBlackbox['embedded'] = {};
    for (const source of json.s) {
      const head = json.p[source]?.split('|')[0];
      if (head) embedded[source] = JSON.parse(head) as Record<string, string>;
    }
    return { loaderVersion: json.v, sources: json.s, embedded };
  } catch {
    return undefined;
  }
}
