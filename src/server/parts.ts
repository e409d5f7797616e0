/**
 * `blackbox-capture/server/parts`: the kit's building blocks for a program that puts the kit
 * together itself, as the gateway does (src/gateway/, `npx blackbox-capture serve`): one
 * host's SQLite store and data file, the store's key parts and lease marks, the callbacks'
 * pending list, the retry's backoff, the status counters, the regions as words and the
 * callback sources. What each is and what it promises is in docs/server.md#building-blocks;
 * a program built on the factories alone (`blackbox-capture/server`) needs none of it.
 */
export { referenceRuleBroken } from './api/account.js';
export { isRegion, REGIONS_IN_WORDS } from './api/regions.js';
export { doublingMs } from './api/retry.js';
export { isStoreAway } from './errors.js';
export { pendingList } from './callbacks/pending.js';
export { sourceMatcher } from './callbacks/sources.js';
export { isHeldAnswer, isMaybeHeldAnswer, landingOf } from './endpoint/queued.js';
export { DATA_FILE } from './queue/default.js';
export { importLegacyQueue, importLegacyStore } from './sqlite/legacy.js';
export { createSqliteStore } from './sqlite/store.js';
export { gaugeFamily } from './status/exposition.js';
export type { WebhookResult } from './status/names.js';
export { count } from './status/tally.js';
export { ownerMark } from './store/lease.js';
export { keyPart, withTimeLimit } from './store/store.js';
export { settleWithin } from './time/time-limit.js';
export { unrefd } from './time/clock.js';
export { isRelayed } from './proxy/proxy.js';
export { readLimited } from './net/http.js';
