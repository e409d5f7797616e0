/**
 * createFirstPartyProxy's options table: each option's default and check
 * (docs/architecture.md#settings-modules), checked by proxyConfig (options.ts) before its own
 * finer rules, which take the defaults from here; docs/server.md's proxy options are tested
 * against it.
 */
import { oneOf, REQUIRED, RULES, type OptionRule, type OptionTable } from '../options-table.js';
import { DEFAULT_URI_HOOK } from '../../shared/constants.js';
import type { FirstPartyProxyOptions } from './options.js';

const TEXTS: OptionRule = {
  valid: (value) => Array.isArray(value) && value.every((item) => typeof item === 'string'),
  expects: 'a list of strings',
};
const METHOD = oneOf('GET', 'HEAD', 'POST');

/** Every option of createFirstPartyProxy: its default (docs/server.md#the-proxys-options) and its check. */
export const PROXY_OPTIONS = {
  prefix: { default: DEFAULT_URI_HOOK, ...RULES.text },
  collectorUrl: { default: REQUIRED, ...RULES.text },
  fetch: { default: 'node:http with keep-alive on Node, else globalThis.fetch', ...RULES.function },
  timeoutMs: { default: 10_000, ...RULES.ms },
  methods: {
    default: 'GET and HEAD',
    valid: (value) => TEXTS.valid(value) && (value as unknown[]).every(METHOD.valid),
    expects: `a list of ${METHOD.expects}`,
  },
  maxBodyBytes: { default: 64 * 1024, ...RULES.positiveInteger },
  maxRequestsPerClient: { default: 64, ...RULES.positiveInteger },
  cookiePrefix: { default: 'bbc_', ...RULES.text },
  allowCookies: { default: 'none', ...TEXTS },
  trustProxy: { default: false, ...RULES.boolean },
  publicHost: { default: "the request's validated Host", ...RULES.text },
  onError: { default: 'one line on console.error', ...RULES.function },
} as const satisfies OptionTable<FirstPartyProxyOptions>;
