import type { Store } from '../src/server/index.js';
export declare const STORE_CONTRACT: Array<[string, (store: Store) => Promise<void>]>;
