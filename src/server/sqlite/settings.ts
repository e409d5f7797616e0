/**
 * The SQLite store's settings module (docs/architecture.md#settings-modules): createSqliteStore's
 * options with their defaults and checks. Internal: the gateway makes it for DATA_DIR.
 */
import { RULES, type OptionTable } from '../options-table.js';
import type { SqliteStoreOptions } from './store.js';

/** Every option of createSqliteStore: its default and its check. */
export const SQLITE_STORE_OPTIONS = {
  now: { default: 'Date.now', ...RULES.function },
} as const satisfies OptionTable<SqliteStoreOptions>;
