/**
 * The gateway's settings (`npx blackbox-capture serve`), from environment variables: one
 * table of every variable (VARIABLES, which docs/gateway.md lists), one parse that checks
 * them all and answers every problem at once, one line each, naming the variable and never
 * a secret's value.
 */
import { CALLBACK_SOURCES, type Region } from '../server/index.js';
import { isRegion, REGIONS_IN_WORDS, sourceMatcher } from '../server/parts.js';

/** The formats LOG_FORMAT takes (log.ts): the first is the default. */
const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** How a variable is printed: a secret never is, not even in a refusal. */
type Kind = 'plain' | 'secret';

/** The member of GatewaySettings a variable fills (`service.` and `admin.` for the nested ones). */
type SettingPath = keyof GatewaySettings | `service.${string}` | `admin.${string}`;

/** One environment variable: the setting it fills, its default, what it is for. */
interface Variable {
  readonly kind: Kind;
  readonly setting: SettingPath;
  /** What it is for: in docs/gateway.md's table and in the refusal of a required one. */
  readonly meaning: string;
  readonly required?: true;
  /** The value taken when it is unset: parseSettings reads it here. */
  readonly default?: string;
  /** What unset means, when no value stands in for it. */
  readonly unset?: string;
  /** docs/gateway.md only: where to read more (a markdown link). */
  readonly docs?: string;
}

const LOOPBACK = ['127.0.0.0/8', '::1'];
/** The Host names of loopback: the admin routes' default (a DNS-rebound name is none of them). */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
/** The bounds of a time setting, in ms: a tenth of a second to ten minutes. */
const MS_RANGE = { min: 100, max: 600_000 };
const MIN_ORDER_SECRET = 32;
/** The most connections MAX_CONNECTIONS may allow: past a process's usual file limit anyway. */
const MAX_CONNECTIONS_BOUND = 1_000_000;
/** Standard Webhooks keys are 24 to 64 random bytes: fewer than 16 is no key. */
const MIN_WEBHOOK_KEY_BYTES = 16;
const MS_BOUNDS = `${MS_RANGE.min} to ${MS_RANGE.max}`;

/**
 * Every variable the gateway reads, with the setting it fills, its default and what it is for:
 * docs/gateway.md's table is written from it (scripts/reference-docs.mjs).
 */
export const VARIABLES = {
  CLIENT_ID: { kind: 'plain', setting: 'clientId', required: true, meaning: "the service's OAuth2 client id" },
  CLIENT_SECRET: { kind: 'secret', setting: 'clientSecret', required: true, meaning: 'its client secret' },
  REGION: {
    kind: 'plain',
    setting: 'service.region',
    unset: 'TOKEN_URL and BASE_URL instead',
    meaning: `${REGIONS_IN_WORDS}: every address of the service; or the addresses below, by hand`,
  },
  TOKEN_URL: {
    kind: 'plain',
    setting: 'service.tokenUrl',
    meaning: 'the token endpoint, without REGION (the emulator prints it)',
  },
  BASE_URL: {
    kind: 'plain',
    setting: 'service.baseUrl',
    meaning: 'the account host, without REGION (ACCOUNT_URL is the same)',
  },
  ACCOUNT_URL: {
    kind: 'plain',
    setting: 'service.baseUrl',
    meaning: 'the same as BASE_URL (the emulator prints both)',
  },
  API_URL: {
    kind: 'plain',
    setting: 'service.apiBaseUrl',
    unset: 'the origin of BASE_URL',
    meaning: 'the upload and finalize host',
  },
  RETRIEVAL_URL: {
    kind: 'plain',
    setting: 'service.retrievalBaseUrl',
    unset: 'BASE_URL',
    meaning: 'the status and details host',
  },
  COLLECTOR_URL: {
    kind: 'plain',
    setting: 'collectorUrl',
    default: 'https://first.iovation.com/',
    meaning: "the vendor's first-party host behind /iojs/",
    docs: '[proxy](proxy.md)',
  },
  WORKFLOW_KEY: {
    kind: 'plain',
    setting: 'workflowKey',
    required: true,
    meaning: 'the workflow definition key that holds Device Risk',
  },
  ALLOWED_ORIGINS: {
    kind: 'plain',
    setting: 'allowedOrigins',
    required: true,
    meaning: "the checkout pages' origins, comma-separated",
  },
  ORDER_SECRET: {
    kind: 'secret',
    setting: 'orderSecret',
    required: true,
    meaning: `the key of the Order-Token (HS256), at least ${MIN_ORDER_SECRET} characters`,
    docs: '[the order token](#the-order-token)',
  },
  DECISION_URL: {
    kind: 'secret',
    setting: 'decisionUrl',
    required: true,
    meaning:
      'where each decision is POSTed, signed (https, or http on loopback); a user:pass@ in it is taken out of the address and sent as HTTP Basic with every delivery, and the address is logged without it',
  },
  DECISION_URL_PLAIN_HTTP: {
    kind: 'plain',
    setting: 'decisionUrl',
    meaning:
      "private: DECISION_URL may also be http to a private address (10/8, 172.16/12, 192.168/16, fc00::/7) or a one-label name, a container's on a private network; any other value is refused",
    docs: '[the front](#the-front)',
  },
  WEBHOOK_SECRET: {
    kind: 'secret',
    setting: 'webhookKey',
    required: true,
    meaning: `the whsec_… key of those webhooks: whsec_ and at least ${MIN_WEBHOOK_KEY_BYTES} random bytes in base64`,
  },
  DECISIONS_TOKEN: {
    kind: 'secret',
    setting: 'decisionsToken',
    unset: 'GET /decisions/{reference} answers 404',
    meaning: `the bearer of GET /decisions/{reference}, at least ${MIN_ORDER_SECRET} characters`,
  },
  CALLBACK_URL: {
    kind: 'plain',
    setting: 'callbackUrl',
    unset: "the service's account settings",
    meaning: "this gateway's public POST /callback address, sent to the service with each checkout",
  },
  CALLBACK_SOURCES: {
    kind: 'plain',
    setting: 'callbackSources',
    unset: "REGION's published sources; loopback without REGION",
    meaning: 'who may POST /callback: addresses and CIDR ranges, comma-separated',
    docs: '[callback sources](answer.md#callback-sources)',
  },
  TRUSTED_FRONTS: {
    kind: 'plain',
    setting: 'trustedFronts',
    meaning: 'the fronts whose X-Forwarded-For names the shopper, comma-separated',
    docs: '[trusted fronts](#trusted-fronts)',
  },
  REDIS_URL: {
    kind: 'secret',
    setting: 'redisUrl',
    unset: "one instance: DATA_DIR's file",
    meaning:
      'a Redis a fleet of gateways shares: store, BullMQ queue, outbox; needs the packages ioredis and bullmq installed beside this one (a secret: it may hold a password)',
  },
  DATA_DIR: {
    kind: 'plain',
    setting: 'dataDir',
    default: '.blackbox-capture',
    meaning: 'where one instance keeps its store, queue and outbox, in one SQLite file',
    docs: '[the data directory](server.md#the-data-directory)',
  },
  PORT: { kind: 'plain', setting: 'port', default: '8787', meaning: 'the port of the routes (0 picks a free one)' },
  HOST: { kind: 'plain', setting: 'host', default: '127.0.0.1', meaning: 'the address they listen on' },
  ADMIN_PORT: {
    kind: 'plain',
    setting: 'admin.port',
    unset: 'no admin listener',
    meaning: 'the port of the admin routes',
    docs: '[the admin listener](#the-admin-listener)',
  },
  ADMIN_HOST: {
    kind: 'plain',
    setting: 'admin.host',
    default: '127.0.0.1',
    meaning: 'the address of the admin listener',
  },
  ADMIN_HOSTS: {
    kind: 'plain',
    setting: 'admin.hosts',
    default: LOOPBACK_NAMES.join(','),
    meaning:
      'the Host names /status and /metrics answer, comma-separated: any other is 421 misdirected_request, so that a page on a DNS-rebound name cannot read them',
  },
  ADMIN_TOKEN: {
    kind: 'secret',
    setting: 'admin.token',
    unset: 'off loopback, /status and /metrics answer 401 admin_unauthorized',
    meaning: `the bearer /status and /metrics need from an address off loopback, at least ${MIN_ORDER_SECRET} characters`,
  },
  SHUTDOWN_TIMEOUT_MS: {
    kind: 'plain',
    setting: 'shutdownTimeoutMs',
    default: '30000',
    meaning: `how long SIGTERM may take before the process exits anyway, ${MS_BOUNDS}`,
    docs: '[shutting down](#shutting-down-and-restarts)',
  },
  SHUTDOWN_DRAIN_MS: {
    kind: 'plain',
    setting: 'shutdownDrainMs',
    default: '5000',
    meaning: `how long after SIGTERM the listeners stay open, answering /healthz and /readyz 503 and new checkouts 503 shutting_down, so that a load balancer turns shoppers away before they are refused a connection; 0 to ${MS_RANGE.max}, less than SHUTDOWN_TIMEOUT_MS`,
    docs: '[shutting down](#shutting-down-and-restarts)',
  },
  IDLE_TIMEOUT_MS: {
    kind: 'plain',
    setting: 'idleTimeoutMs',
    default: '30000',
    meaning: `a connection that sends nothing for this long is closed, ${MS_BOUNDS}`,
    docs: '[connections](#connections)',
  },
  MAX_CONNECTIONS: {
    kind: 'plain',
    setting: 'maxConnections',
    default: '10000',
    meaning: `the connections each listener holds at once: past it a new one is closed at once, logged (one line each 10 s), so that file descriptors and memory stay the process's own; 1 to ${MAX_CONNECTIONS_BOUND}`,
    docs: '[connections](#connections)',
  },
  LOG_FORMAT: {
    kind: 'plain',
    setting: 'logFormat',
    default: LOG_FORMATS[0],
    meaning:
      'text: a line per event on stderr, for a terminal; json: one JSON object per line (time, level, event, code, reference, message), for a log collector',
    docs: '[logs](#logs)',
  },
  USER_AGENT: {
    kind: 'plain',
    setting: 'userAgent',
    default: 'blackbox-capture-gateway',
    meaning: 'names the shop to the service',
  },
} as const satisfies Record<string, Variable>;

type VariableName = keyof typeof VARIABLES;

export interface GatewaySettings {
  clientId: string;
  clientSecret: string;
  /** The service's addresses: a region, or each by hand. */
  service: { region: Region } | { tokenUrl: string; baseUrl: string; apiBaseUrl?: string; retrievalBaseUrl?: string };
  collectorUrl: string;
  workflowKey: string;
  allowedOrigins: string[];
  orderSecret: string;
  /** Without its credentials: those are `decisionAuthorization`. */
  decisionUrl: string;
  /** `Basic …` of the user and password DECISION_URL named (`https://user:pass@host/…`), if it did. */
  decisionAuthorization?: string;
  /** The key of the webhook signatures: the bytes after `whsec_`. */
  webhookKey: Uint8Array<ArrayBuffer>;
  decisionsToken?: string;
  callbackUrl?: string;
  callbackSources: string[];
  trustedFronts: string[];
  redisUrl?: string;
  dataDir: string;
  port: number;
  host: string;
  admin?: {
    port: number;
    host: string;
    /** The Host names (lower case, with no port) /status and /metrics answer. */
    hosts: string[];
    /** The bearer they need from an address off loopback; none: they answer only loopback. */
    token?: string;
  };
  userAgent: string;
  /** How long SIGTERM's close may take before the process exits anyway, in ms. */
  shutdownTimeoutMs: number;
  /** How long the listeners stay open after SIGTERM, answering 503, before they close. */
  shutdownDrainMs: number;
  /** A connection idle (nothing sent) this long is closed, in ms; the HTTP server's other limits follow from it. */
  idleTimeoutMs: number;
  /** Connections each listener holds at once. */
  maxConnections: number;
  /** LOG_FORMAT: how the log's lines are written (log.ts). */
  logFormat: LogFormat;
}

/** A refused configuration: one line per problem. */
export class SettingsError extends Error {
  readonly code = 'invalid_configuration';
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'SettingsError';
  }
}

/** Parses and checks every variable; throws SettingsError listing every problem. */
export function parseSettings(env: Record<string, string | undefined>): GatewaySettings {
  const problems: string[] = [];
  const read = (name: VariableName) => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const required = (name: VariableName) => {
    const value = read(name);
    if (value === undefined) problems.push(`${name} is required: ${VARIABLES[name].meaning}`);
    return value ?? '';
  };
  const url = (name: VariableName, value: string | undefined, loopbackHttp = true) => {
    if (value === undefined) return undefined;
    const shown = VARIABLES[name].kind === 'secret' ? 'its value' : JSON.stringify(value);
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      problems.push(`${name} must be an absolute URL (got ${shown})`);
      return undefined;
    }
    if (parsed.protocol !== 'https:' && !(loopbackHttp && parsed.protocol === 'http:' && isLoopback(parsed.hostname)))
      problems.push(`${name} must be an https URL (http only on loopback) (got ${shown})`);
    return value;
  };
  const list = (name: VariableName) =>
    (read(name) ?? '')
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
  const sources = (name: VariableName, fallback: string[]) => {
    const entries = list(name);
    if (entries.length === 0) return fallback;
    try {
      sourceMatcher(entries);
    } catch {
      problems.push(`${name} must list addresses or CIDR ranges (got ${JSON.stringify(read(name))})`);
    }
    return entries;
  };

  const clientId = required('CLIENT_ID');
  const clientSecret = required('CLIENT_SECRET');
  const service = serviceOf(read, url, problems);
  const origins = list('ALLOWED_ORIGINS');
  if (origins.length === 0) problems.push(`ALLOWED_ORIGINS is required: ${VARIABLES.ALLOWED_ORIGINS.meaning}`);
  for (const origin of origins)
    if (!isOrigin(origin))
      problems.push(`ALLOWED_ORIGINS: ${JSON.stringify(origin)} is no origin (scheme://host[:port])`);
  const orderSecret = required('ORDER_SECRET');
  if (orderSecret && orderSecret.length < MIN_ORDER_SECRET)
    problems.push(`ORDER_SECRET must be at least ${MIN_ORDER_SECRET} characters (it has ${orderSecret.length})`);
  const webhookKey = webhookKeyOf(required('WEBHOOK_SECRET'), problems);
  const port = portOf('PORT', read('PORT') ?? VARIABLES.PORT.default, problems);
  const adminPort = read('ADMIN_PORT');
  const region = 'region' in service ? service.region : undefined;
  const settings: GatewaySettings = {
    clientId,
    clientSecret,
    service,
    collectorUrl: url('COLLECTOR_URL', read('COLLECTOR_URL')) ?? VARIABLES.COLLECTOR_URL.default,
    workflowKey: required('WORKFLOW_KEY'),
    allowedOrigins: origins,
    orderSecret,
    decisionUrl: decisionUrlOf(required('DECISION_URL'), read('DECISION_URL_PLAIN_HTTP'), url, problems),
    webhookKey,
    callbackSources: sources('CALLBACK_SOURCES', region && isRegion(region) ? [...CALLBACK_SOURCES[region]] : LOOPBACK),
    trustedFronts: sources('TRUSTED_FRONTS', []),
    dataDir: read('DATA_DIR') ?? VARIABLES.DATA_DIR.default,
    port,
    host: read('HOST') ?? VARIABLES.HOST.default,
    userAgent: read('USER_AGENT') ?? VARIABLES.USER_AGENT.default,
    shutdownTimeoutMs: msOf('SHUTDOWN_TIMEOUT_MS', read('SHUTDOWN_TIMEOUT_MS'), problems),
    shutdownDrainMs: msOf('SHUTDOWN_DRAIN_MS', read('SHUTDOWN_DRAIN_MS'), problems, 0),
    idleTimeoutMs: msOf('IDLE_TIMEOUT_MS', read('IDLE_TIMEOUT_MS'), problems),
    maxConnections: maxConnectionsOf(read('MAX_CONNECTIONS'), problems),
    logFormat: logFormatOf(read('LOG_FORMAT'), problems),
  };
  // The drain is part of the stop, which SHUTDOWN_TIMEOUT_MS bounds: the checks under way need time after it.
  if (settings.shutdownDrainMs >= settings.shutdownTimeoutMs)
    problems.push(
      `SHUTDOWN_DRAIN_MS (${settings.shutdownDrainMs}) must be less than SHUTDOWN_TIMEOUT_MS (${settings.shutdownTimeoutMs})`,
    );
  const decisionsToken = read('DECISIONS_TOKEN');
  if (decisionsToken !== undefined) {
    if (decisionsToken.length < MIN_ORDER_SECRET)
      problems.push(
        `DECISIONS_TOKEN must be at least ${MIN_ORDER_SECRET} characters (it has ${decisionsToken.length})`,
      );
    settings.decisionsToken = decisionsToken;
  }
  Object.assign(settings, withoutCredentials(settings.decisionUrl));
  const callbackUrl = url('CALLBACK_URL', read('CALLBACK_URL'));
  if (callbackUrl) settings.callbackUrl = callbackUrl;
  const redisUrl = read('REDIS_URL');
  if (redisUrl !== undefined) {
    if (!/^rediss?:\/\//.test(redisUrl)) problems.push('REDIS_URL must be a redis:// or rediss:// URL');
    settings.redisUrl = redisUrl;
  }
  if (adminPort !== undefined) {
    settings.admin = {
      port: portOf('ADMIN_PORT', adminPort, problems),
      host: read('ADMIN_HOST') ?? VARIABLES.ADMIN_HOST.default,
      hosts: list('ADMIN_HOSTS').length
        ? list('ADMIN_HOSTS').map((host) => host.toLowerCase())
        : VARIABLES.ADMIN_HOSTS.default.split(','),
    };
    const adminToken = read('ADMIN_TOKEN');
    if (adminToken !== undefined) {
      if (adminToken.length < MIN_ORDER_SECRET)
        problems.push(`ADMIN_TOKEN must be at least ${MIN_ORDER_SECRET} characters (it has ${adminToken.length})`);
      settings.admin.token = adminToken;
    }
    if (settings.admin.port === port && port !== 0) problems.push('ADMIN_PORT must differ from PORT');
  }
  if (problems.length) throw new SettingsError(problems);
  return settings;
}

/**
 * DECISION_URL's `user:pass@`, taken out of the address (fetch refuses a URL that holds
 * credentials) and sent as HTTP Basic instead: the address is then safe to log.
 */
function withoutCredentials(decisionUrl: string): Pick<GatewaySettings, 'decisionUrl' | 'decisionAuthorization'> {
  if (!decisionUrl) return { decisionUrl };
  const url = new URL(decisionUrl);
  if (!url.username && !url.password) return { decisionUrl };
  const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  url.username = '';
  url.password = '';
  return {
    decisionUrl: url.href,
    decisionAuthorization: `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`,
  };
}

type Reader = (name: VariableName) => string | undefined;
type UrlCheck = (name: VariableName, value: string | undefined) => string | undefined;

/** REGION, or TOKEN_URL and BASE_URL (or ACCOUNT_URL) by hand: exactly one of the two. */
function serviceOf(read: Reader, url: UrlCheck, problems: string[]): GatewaySettings['service'] {
  const region = read('REGION');
  const base = read('BASE_URL') ?? read('ACCOUNT_URL');
  const byHand = read('TOKEN_URL') !== undefined || base !== undefined;
  if (region !== undefined) {
    if (!isRegion(region.toUpperCase()))
      problems.push(`REGION must be ${REGIONS_IN_WORDS} (got ${JSON.stringify(region)})`);
    if (byHand) problems.push('REGION and TOKEN_URL/BASE_URL exclude each other: give one');
    return { region: region.toUpperCase() as Region };
  }
  if (!byHand) {
    problems.push('REGION is required, or TOKEN_URL and BASE_URL (as npx blackbox-capture-emulator --env prints)');
    return { tokenUrl: '', baseUrl: '' };
  }
  if (read('BASE_URL') && read('ACCOUNT_URL') && read('BASE_URL') !== read('ACCOUNT_URL'))
    problems.push('BASE_URL and ACCOUNT_URL name the same host: they must be equal');
  const tokenUrl = url('TOKEN_URL', read('TOKEN_URL'));
  if (tokenUrl === undefined && read('TOKEN_URL') === undefined) problems.push('TOKEN_URL is required with BASE_URL');
  if (base === undefined) problems.push('BASE_URL is required with TOKEN_URL');
  const apiBaseUrl = url('API_URL', read('API_URL'));
  const retrievalBaseUrl = url('RETRIEVAL_URL', read('RETRIEVAL_URL'));
  return {
    tokenUrl: tokenUrl ?? '',
    baseUrl: url(read('BASE_URL') ? 'BASE_URL' : 'ACCOUNT_URL', base) ?? '',
    ...(apiBaseUrl ? { apiBaseUrl } : {}),
    ...(retrievalBaseUrl ? { retrievalBaseUrl } : {}),
  };
}

/** `whsec_` then base64 (Standard Webhooks): the key is the decoded bytes. */
function webhookKeyOf(secret: string, problems: string[]): Uint8Array<ArrayBuffer> {
  if (!secret) return new Uint8Array();
  const encoded = secret.startsWith('whsec_') ? secret.slice(6) : undefined;
  const bytes =
    encoded !== undefined && /^[A-Za-z0-9+/]+={0,2}$/.test(encoded) && encoded.length % 4 === 0
      ? Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0))
      : undefined;
  if (!bytes) problems.push('WEBHOOK_SECRET must be whsec_ followed by base64 (Standard Webhooks)');
  else if (bytes.length < MIN_WEBHOOK_KEY_BYTES)
    problems.push(
      `WEBHOOK_SECRET must hold at least ${MIN_WEBHOOK_KEY_BYTES} bytes after whsec_ (it holds ${bytes.length})`,
    );
  return bytes ?? new Uint8Array();
}

function msOf(
  name: 'SHUTDOWN_TIMEOUT_MS' | 'SHUTDOWN_DRAIN_MS' | 'IDLE_TIMEOUT_MS',
  text: string | undefined,
  problems: string[],
  min = MS_RANGE.min,
): number {
  if (text === undefined) return Number(VARIABLES[name].default);
  const ms = /^\d{1,7}$/.test(text) ? Number(text) : NaN;
  if (!(ms >= min && ms <= MS_RANGE.max))
    problems.push(`${name} must be a number of milliseconds, ${min} to ${MS_RANGE.max} (got ${JSON.stringify(text)})`);
  return ms;
}

function maxConnectionsOf(text: string | undefined, problems: string[]): number {
  if (text === undefined) return Number(VARIABLES.MAX_CONNECTIONS.default);
  const count = /^\d{1,7}$/.test(text) ? Number(text) : NaN;
  if (!(count >= 1 && count <= MAX_CONNECTIONS_BOUND))
    problems.push(
      `MAX_CONNECTIONS must be a whole number, 1 to ${MAX_CONNECTIONS_BOUND} (got ${JSON.stringify(text)})`,
    );
  return count;
}

function portOf(name: VariableName, text: string, problems: string[]): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 0 && port <= 65535))
    problems.push(`${name} must be a port number, 0 to 65535 (got ${JSON.stringify(text)})`);
  return port;
}

function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === text;
  } catch {
    return false;
  }
}

const isLoopback = (hostname: string) =>
  hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);

/** Private ranges (RFC 1918, RFC 4193) and loopback: where DECISION_URL_PLAIN_HTTP=private lets plain http go. */
const PRIVATE_RANGES = sourceMatcher(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', ...LOOPBACK]);

/**
 * DECISION_URL: https, or http on loopback; with DECISION_URL_PLAIN_HTTP=private, also http to
 * a private address or a one-label name (a container's, on a private network between two
 * containers: docs/gateway.md#the-front), which the URL parser has already put in its plain form.
 */
function decisionUrlOf(value: string, plainHttp: string | undefined, url: UrlCheck, problems: string[]): string {
  if (plainHttp !== undefined && plainHttp !== 'private')
    problems.push(`DECISION_URL_PLAIN_HTTP must be private, or unset (got ${JSON.stringify(plainHttp)})`);
  const parsed = URL.canParse(value) ? new URL(value) : undefined;
  if (plainHttp !== 'private' || parsed?.protocol !== 'http:') return url('DECISION_URL', value || undefined) ?? '';
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!PRIVATE_RANGES(host) && !/^[a-z0-9-]+$/i.test(host))
    problems.push(
      // DECISION_URL is a secret (it may carry user:pass@): its value is never printed.
      'DECISION_URL must be https, or http to a private address or a one-label name with DECISION_URL_PLAIN_HTTP=private (got its value)',
    );
  return value;
}

/** LOG_FORMAT: one of LOG_FORMATS (unset: the first, text); anything else is refused, never read as text. */
function logFormatOf(value: string | undefined, problems: string[]): LogFormat {
  if (value === undefined) return LOG_FORMATS[0];
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  problems.push(`LOG_FORMAT must be ${LOG_FORMATS.join(' or ')} (got ${JSON.stringify(value)})`);
  return LOG_FORMATS[0];
}
