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
