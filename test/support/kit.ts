// The server kit's endpoint on the emulated service, for the vitest tests of the sources:
// test/support/emulated-kit.mjs's assembly (the one runtimes/checks.mjs runs from the packed
// tarball) given the sources, and emulators that close after each test.
import { afterEach } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';
import * as kit from '../../src/server/index.js';
import type { DeviceRiskClient, DeviceRiskHandler, DeviceRiskHandlerOptions } from '../../src/server/index.js';
import {
  checkoutHandler,
  SHOP,
  emulatedClient,
  emulatedHandler,
  emulatedTokenSource,
  type EmulatedClientOptions,
  type EmulatedHandlerOptions,
} from './emulated-kit.mjs';

export { BLACKBOX, SHOP, UA, type EmulatedClientOptions, type EmulatedHandlerOptions } from './emulated-kit.mjs';

/**
 * A blackbox of its own for `tag` (a checkout's key or order): the endpoint refuses a blackbox
 * already used for another key (src/server/endpoint/reuse.ts), so each checkout brings its own.
 */
export const blackboxOf = (tag: string): string =>
  '0400' + Buffer.from(tag).toString('hex') + 'nVQ+/abc'.repeat(150) + '==';

/**
 * A checkout as the page posts it to SHOP's endpoint under the Idempotency-Key `key`, with
 * `order` (`key` unless given) as its order (the `x-order` header the tests' resolveCustomer
 * reads) and a blackbox of its own; `headers` added.
 */
export const checkoutFor = (
  key: string,
  { order = key, headers = {} }: { order?: string; headers?: Record<string, string> } = {},
): Request =>
  new Request(`${SHOP}/device-risk`, {
    method: 'POST',
    headers: { origin: SHOP, 'content-type': 'application/json', 'idempotency-key': key, 'x-order': order, ...headers },
    body: JSON.stringify({ blackbox: blackboxOf(order) }),
  });

/**
 * SHOP's endpoint as the Redis fleet tests run it on `options.client`: the order from the
 * `x-order` header (checkoutFor), no admission limit, every error into `errors`, each order
 * told to onResult into `told`. `create` is the kit's own unless a test loads the kit anew.
 */
export const orderTellingHandler = (
  options: Pick<DeviceRiskHandlerOptions, 'client'> & Partial<DeviceRiskHandlerOptions>,
  errors: unknown[],
  told: string[],
  create: typeof kit.createDeviceRiskHandler = kit.createDeviceRiskHandler,
): DeviceRiskHandler =>
  create({
    allowedOrigins: [SHOP],
    workflowKey: 10020,
    reportStatus: false,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order')! }),
    onError: (error) => errors.push(error),
    onResult: (_, { customerInternalReference }) => void told.push(customerInternalReference!),
    ...options,
  });

/**
 * SHOP's endpoint in a Redis fleet test: orderTellingHandler on `store` and `queue`, its client
 * on `emulator` with its tokens in `store`, at a limit the emulator (whose own is off) never meets.
 */
export const fleetHandlerOn = (
  emulator: Emulator,
  parts: { store: kit.Store; queue: kit.CheckQueue },
  errors: unknown[],
  told: string[],
): DeviceRiskHandler =>
  orderTellingHandler(
    {
      client: clientOn(emulator, {
        tokenSource: { store: parts.store },
        limits: { accountRequestsPerSecond: 100, accountBurst: 50 },
      }),
      ...parts,
    },
    errors,
    told,
  );

/** A token source of the sources with `emulator`'s credentials, `options` over those. */
export const tokenSourceOn = (emulator: Emulator, options?: Partial<kit.TokenSourceOptions>): kit.TokenSource =>
  emulatedTokenSource(kit, emulator, options);

/** A Device Risk client of the sources on `emulator`. */
export const clientOn = (emulator: Emulator, options?: EmulatedClientOptions): DeviceRiskClient =>
  emulatedClient(kit, emulator, options);

/** The endpoint of the sources for SHOP's checkouts, its client on `emulator`. */
export const handlerOn = (emulator: Emulator, options: EmulatedHandlerOptions): DeviceRiskHandler =>
  emulatedHandler(kit, emulator, options);

/** Client options for the endpoint's tests: one attempt, and no waits (the waits are the client's and the token source's own tests). */
export function oneAttempt(extra: EmulatedClientOptions = {}): EmulatedClientOptions {
  const { tokenSource, ...client } = extra;
  return { maxAttempts: 1, sleep: async () => {}, ...client, tokenSource: { sleep: async () => {}, ...tokenSource } };
}

/**
 * For a file's tests: the returned function starts an emulator (its account rate limit off
 * unless `options` set one), and every emulator it started is closed after the test.
 */
export function useEmulators(): (options?: EmulatorOptions) => Promise<Emulator> {
  const running: Emulator[] = [];
  afterEach(async () => {
    for (const emulator of running.splice(0)) await emulator.close();
  });
  return async (options = {}) => {
    const emulator = await startEmulator({ accountRequestsPerSecond: 0, ...options });
    running.push(emulator);
    return emulator;
  };
}

/** The endpoint of the sources for SHOP's checkouts (workflow 10020, customer order-1) on `client`, a stub or a real one. */
export const handlerWith = (
  client: DeviceRiskClient,
  options: Partial<DeviceRiskHandlerOptions> = {},
): DeviceRiskHandler =>
  checkoutHandler(kit, { resolveCustomer: () => ({ customerInternalReference: 'order-1' }), ...options, client });
