// What the queue benches share: the blackbox, the shop, the user agent, a quantile, the
// built kit's client of an emulator, a checkout's request, a flood's schedule, the gateway's order tokens.
import * as kit from '../dist/server.js';
import { emulatedClient } from '../test/support/emulated-kit.mjs';
import { importSource } from '../scripts/import-source.mjs';

export const BLACKBOX = '0400' + 'nVQ+/abcXYZ0123'.repeat(80) + '==';
/** A checkout's own blackbox: the endpoint refuses one already used for another key (src/server/endpoint/reuse.ts). */
export const blackboxOf = (tag) => BLACKBOX.slice(0, 4) + Buffer.from(tag).toString('hex') + BLACKBOX.slice(4);
export const SHOP = 'https://shop.example';
export const USER_AGENT = 'blackbox-capture-bench/1';

/** The q-quantile of `xs` (NaN for none). */
export const quantile = (xs, q) => {
  if (!xs.length) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

/** The built kit's Device Risk client of `emulator`, as the tests assemble it (test/support/emulated-kit.mjs). */
export const benchClient = (emulator) =>
  emulatedClient(kit, emulator, { userAgent: USER_AGENT, tokenSource: { userAgent: USER_AGENT } });

/**
 * A checkout as the browser package posts it to `url` (the endpoint's path included): the
 * shop's origin, `key` as its Idempotency-Key and a blackbox of its own, `headers` over those.
 */
export const checkoutRequest = (url, key, headers = {}) =>
  new Request(url, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key, ...headers },
    body: JSON.stringify({ blackbox: blackboxOf(key) }),
  });

/**
 * A flood of `floodPerSecond` checkouts for `offerMs` (none when `flood` is not given) beside one
 * shopper every `everyMs`, the first 500 ms in, each started on time: `flood(i)` and
 * `shopper(i)` start a post and return its promise. Resolves when every post has settled, with
 * when the offer started and how many of each it offered.
 */
export async function offerBesideFlood({ flood, shopper, floodPerSecond = 20, everyMs = 2000, offerMs }) {
  const events = [];
  const floodOffered = flood ? Math.round((floodPerSecond * offerMs) / 1000) : 0;
  for (let i = 0; i < floodOffered; i++) events.push({ at: (i * 1000) / floodPerSecond, flood: i });
  for (let i = 0; i * everyMs < offerMs; i++) events.push({ at: i * everyMs + 500, shopper: i });
  events.sort((a, b) => a.at - b.at);
  const jobs = [];
  const started = performance.now();
  for (const event of events) {
    const wait = started + event.at - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    jobs.push(event.shopper === undefined ? flood(event.flood) : shopper(event.shopper));
  }
  await Promise.all(jobs);
  return { started, floodOffered, shoppersOffered: events.length - floodOffered };
}

let minting;
/**
 * The gateway's own order-token minting (`mintOrderToken`, src/gateway/order-token.ts: no
 * public entry holds it): `(secret, { customerInternalReference, userReference? }) => Promise<token>`.
 */
export function orderTokenMinter() {
  return (minting ??= importSource('src/gateway/order-token.ts', 'bench').then((module) => module.mintOrderToken));
}
