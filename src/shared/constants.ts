/**
 * Values the browser package, the server kit and the doctor must agree on. Plain literals
 * only, with no import and no code run at import time: a bundler inlines what a side uses
 * and drops the rest, so no side pulls in another (types.ts holds the shared types).
 */

/**
 * The path on the shop's own origin under which the loader's first-party requests go (the
 * loader's `uri_hook`) and the first-party proxy answers them (its `prefix`): the two must be
 * the same path (docs/proxy.md).
 */
export const DEFAULT_URI_HOOK = '/iojs';

/**
 * The blackbox's rules (docs/vendor-contract.md#the-blackbox): it starts with this prefix, is
 * written in the base64 alphabet ("@" in some old ones), and is at most this long (real ones are
 * 1,100 to 1,300 characters). The server kit refuses any other before it is sent anywhere; the
 * emulator's service refuses it as the service would, and its scripts make blackboxes of this shape.
 */
export const BLACKBOX_PREFIX = '0400';
export const BLACKBOX_PATTERN = /^[A-Za-z0-9+/@]+=*$/;
export const MAX_BLACKBOX_LENGTH = 8001;
