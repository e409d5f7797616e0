/**
 * The fleet's access token in the store: sealed (the store never holds a usable token),
 * fresh until shortly before expiry, the last one read or stored kept in memory, and
 * forgotten only when it is the one the API refused.
 */
import { fromStore, type Store } from '../../store/store.js';
import type { Now } from '../../time/clock.js';
import type { CachedToken } from '../token-source.js';

/**
 * The token answer's `expires_in` in seconds: at least `min` (a shorter one would mean a request
 * per call; the kit never serves a token past the expiry the service gave), kept for at most
 * `max` (never a token cached for ever), `default` when the answer has none.
 */
export const TOKEN_LIFETIME_BOUNDS = { min: 10, max: 24 * 3600, default: 3600 } as const;

/**
 * The lifetime in seconds a token answer's `expires_in` stands for (see TOKEN_LIFETIME_BOUNDS):
 * a number, or a string of digits (the same number quoted); undefined for one that is present
 * but no lifetime the kit takes (0 or less, under `min`, not a number), which fails the request.
 */
export function tokenLifetimeSeconds(expiresIn: unknown): number | undefined {
  if (expiresIn === undefined || expiresIn === null) return TOKEN_LIFETIME_BOUNDS.default;
  const seconds = typeof expiresIn === 'string' && /^\d{1,12}$/.test(expiresIn) ? Number(expiresIn) : expiresIn;
  if (typeof seconds !== 'number' || !(seconds >= TOKEN_LIFETIME_BOUNDS.min)) return undefined;
  return Math.min(TOKEN_LIFETIME_BOUNDS.max, seconds);
}

export interface TokenCacheContext {
  store: Store;
  keyOf: (name: string) => Promise<string>;
  now: Now;
  /** Refresh this long before expiry, in ms. */
  marginMs: number;
  seal: (secret: string) => Promise<string>;
  unseal: (sealed: string) => Promise<string>;
}

export interface TokenCache {
  /** The stored token, when it is still fresh. */
  storedToken(this: void): Promise<CachedToken | undefined>;
  /** A new token: this source's from now on, and the fleet's when the store takes it. */
  save(this: void, token: CachedToken, lifetimeMs: number): Promise<void>;
  /** Forget the token (after the API refused it), unless another instance has already replaced it. */
  invalidate(this: void, refused?: string): Promise<void>;
}

export function createTokenCache(context: TokenCacheContext): TokenCache {
  const { store, keyOf, now, marginMs, seal, unseal } = context;
  /**
   * Fresh until `refreshMarginSeconds` before expiry, but never less than half its
   * lifetime is used: a token shorter-lived than the margin would mean a request per call.
   */
  const fresh = (token: CachedToken) =>
    token.expiresAt - Math.min(marginMs, (token.expiresAt - (token.issuedAt ?? token.expiresAt)) / 2) > now();

  /** The last token this source read or stored: a fresh one saves a store read per API call. */
  let known: CachedToken | undefined;
  /**
   * The last token the service refused: never handed out again, even when a read racing its
   * invalidation finds it still in the store (the call's one retry would be refused with it too).
   */
  let refusedToken: string | undefined;

  /** The stored token, when it is still fresh (and not the one refused). */
  async function storedToken(): Promise<CachedToken | undefined> {
    if (known && fresh(known) && known.accessToken !== refusedToken) return known;
    const stored = await fromStore(store.get(await keyOf('token')), 'token read');
    if (stored === undefined) return undefined;
    const token = await openToken(stored);
    if (!token || !fresh(token) || token.accessToken === refusedToken) return undefined;
    return (known = token);
  }

  /** A stored token is sealed: the store (a shared Redis) never holds a usable access token. */
  const sealToken = async (token: CachedToken) =>
    JSON.stringify({ ...token, accessToken: await seal(token.accessToken) });
  /** A stored token opened; undefined for one this secret did not seal (a store shared across versions). */
  async function openToken(stored: string): Promise<CachedToken | undefined> {
    try {
      const token = JSON.parse(stored) as CachedToken;
      return { ...token, accessToken: await unseal(token.accessToken) };
    } catch {
      return undefined;
    }
  }

  return {
    storedToken,
    async save(token, lifetimeMs) {
      known = token;
      // A token that could not be stored is still this source's to use: the fleet fetches its own.
      await fromStore(store.set(await keyOf('token'), await sealToken(token), lifetimeMs), 'token write').catch(
        () => {},
      );
    },
    async invalidate(refused) {
      if (refused !== undefined) refusedToken = refused;
      if (refused === undefined || known?.accessToken === refused) known = undefined;
      const tokenKey = await keyOf('token');
      const stored = await fromStore(store.get(tokenKey), 'token read');
      // Only the refused token: another instance may already have stored its successor.
      if (stored !== undefined && (refused === undefined || (await openToken(stored))?.accessToken === refused)) {
        await fromStore(store.compareAndDelete(tokenKey, stored), 'token delete');
      }
    },
  };
}
