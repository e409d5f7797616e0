// The server kit put together on an emulated service, as an app puts it together: the token
// source, the Device Risk client and the endpoint (createDeviceRiskHandler). Plain JavaScript,
// given the kit's module, so that one assembly serves the vitest tests (the sources, through
// test/support/kit.ts) and runtimes/checks.mjs (the packed tarball, in Node, Deno and Bun).

export const SHOP = 'https://shop.example';
export const UA = 'AcmeShop Checkout/1.0';
/** A blackbox as the vendor's scripts make one (docs/vendor-contract.md): '0400', base64, padding. */
export const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';

/** A token source of `kit` with the emulator's credentials, `options` over those. */
export function emulatedTokenSource(kit, emulator, options = {}) {
  return kit.createTokenSource({
    clientId: emulator.clientId,
    clientSecret: emulator.clientSecret,
    tokenUrl: emulator.tokenUrl,
    userAgent: UA,
    ...options,
  });
}

/** A Device Risk client of `kit` with the emulator's credentials and addresses; `tokenSource` adds to the token source's options. */
export function emulatedClient(kit, emulator, { tokenSource = {}, ...client } = {}) {
  return kit.createDeviceRiskClient({
    tokenSource: emulatedTokenSource(kit, emulator, tokenSource),
    // Each role on its own origin, as the service's: account, API (upload, finalize), retrieval.
    ...emulator.serviceUrls,
    userAgent: UA,
    ...client,
  });
}

/** The endpoint of `kit` for SHOP's checkouts of workflow 10020, with `options` over those. */
export function checkoutHandler(kit, options) {
  return kit.createDeviceRiskHandler({ answer: 'checked', allowedOrigins: [SHOP], workflowKey: 10020, ...options });
}

/** A checkoutHandler on `emulator`: `client` is a client, or an emulatedClient's options. */
export function emulatedHandler(kit, emulator, { client = {}, ...options }) {
  const isClient = typeof client.createAccount === 'function';
  return checkoutHandler(kit, { ...options, client: isClient ? client : emulatedClient(kit, emulator, client) });
}
