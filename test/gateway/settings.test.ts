import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTINGS_WIRING } from '../../src/gateway/gateway.js';
import { parseSettings, SettingsError, VARIABLES } from '../../src/gateway/settings.js';
import { REGIONS_IN_WORDS } from '../../src/server/api/regions.js';

const WHSEC = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
const ORDER_SECRET = 'o'.repeat(32);
/** A configuration the gateway takes: the emulator's names, as `--env` prints them. */
const GOOD = {
  CLIENT_ID: 'emulator-client',
  CLIENT_SECRET: 'emulator-secret-value',
  TOKEN_URL: 'http://127.0.0.1:4303/oauth2/token',
  BASE_URL: 'http://127.0.0.1:4304',
  API_URL: 'http://127.0.0.1:4306',
  RETRIEVAL_URL: 'http://127.0.0.1:4305',
  COLLECTOR_URL: 'http://127.0.0.1:4301/',
  WORKFLOW_KEY: '10011',
  ALLOWED_ORIGINS: 'https://shop.example, http://localhost:8080',
  ORDER_SECRET,
  DECISION_URL: 'https://shop.example/webhooks/device-risk',
  WEBHOOK_SECRET: WHSEC,
};

/** The problems of `env`, one line each. */
function problems(env: Record<string, string | undefined>): string[] {
  try {
    parseSettings(env);
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError);
    expect((error as SettingsError).code).toBe('invalid_configuration');
    return (error as SettingsError).problems;
  }
  return [];
}

describe('the gateway settings', () => {
  it('take the emulator names and fill the defaults', () => {
    const settings = parseSettings(GOOD);
    expect(settings.service).toEqual({
      tokenUrl: GOOD.TOKEN_URL,
      baseUrl: GOOD.BASE_URL,
      apiBaseUrl: GOOD.API_URL,
      retrievalBaseUrl: GOOD.RETRIEVAL_URL,
    });
    expect(settings.allowedOrigins).toEqual(['https://shop.example', 'http://localhost:8080']);
    expect(settings.webhookKey).toEqual(new Uint8Array(24).fill(7));
    expect(settings).toMatchObject({ port: 8787, host: '127.0.0.1', dataDir: '.blackbox-capture' });
    // Not a region: callbacks from loopback (the emulator) unless CALLBACK_SOURCES says otherwise.
    expect(settings.callbackSources).toEqual(['127.0.0.0/8', '::1']);
    expect(settings.trustedFronts).toEqual([]);
    expect(settings.admin).toBeUndefined();
    expect(settings.decisionsToken).toBeUndefined();
  });

  it('take ACCOUNT_URL for BASE_URL, and a region with its callback sources', () => {
    const { BASE_URL, ...rest } = GOOD;
    expect(parseSettings({ ...rest, ACCOUNT_URL: BASE_URL }).service).toMatchObject({ baseUrl: BASE_URL });
    const { TOKEN_URL: _t, BASE_URL: _b, API_URL: _a, RETRIEVAL_URL: _r, ...noUrls } = GOOD;
    const eu = parseSettings({ ...noUrls, REGION: 'eu' });
    expect(eu.service).toEqual({ region: 'EU' });
    expect(eu.callbackSources).toContain('52.48.0.25');
    expect(parseSettings({ ...noUrls, REGION: 'EU', CALLBACK_SOURCES: '10.0.0.0/8' }).callbackSources).toEqual([
      '10.0.0.0/8',
    ]);
  });

  it('take the optional ones', () => {
    const settings = parseSettings({
      ...GOOD,
      ADMIN_PORT: '9090',
      PORT: '0',
      HOST: '0.0.0.0',
      DECISIONS_TOKEN: 'd'.repeat(32),
      CALLBACK_URL: 'https://gateway.shop.example/callback',
      TRUSTED_FRONTS: '10.0.0.0/8, 127.0.0.1',
      REDIS_URL: 'redis://127.0.0.1:6379',
      DATA_DIR: '/var/lib/gateway',
    });
    expect(settings).toMatchObject({
      admin: { port: 9090, host: '127.0.0.1' },
      port: 0,
      host: '0.0.0.0',
      decisionsToken: 'd'.repeat(32),
      callbackUrl: 'https://gateway.shop.example/callback',
      trustedFronts: ['10.0.0.0/8', '127.0.0.1'],
      redisUrl: 'redis://127.0.0.1:6379',
      dataDir: '/var/lib/gateway',
    });
  });

  it('refuse nothing given with one line per required variable', () => {
    const lines = problems({});
    for (const name of [
      'CLIENT_ID',
      'CLIENT_SECRET',
      'WORKFLOW_KEY',
      'ALLOWED_ORIGINS',
      'ORDER_SECRET',
      'DECISION_URL',
      'WEBHOOK_SECRET',
    ])
      expect(lines.filter((line) => line.startsWith(`${name} is required`))).toHaveLength(1);
    expect(lines).toContain(
      'REGION is required, or TOKEN_URL and BASE_URL (as npx blackbox-capture-emulator --env prints)',
    );
    expect(lines).toHaveLength(8);
  });

  // Each bad variable, alone: its one line, naming it.
  const BAD: Array<[string, Record<string, string>, string]> = [
    ['REGION', { REGION: 'MARS' }, `REGION must be ${REGIONS_IN_WORDS} (got "MARS")`],
    ['LOG_FORMAT', { LOG_FORMAT: 'yaml' }, 'LOG_FORMAT must be text or json (got "yaml")'],
    ['TOKEN_URL', { TOKEN_URL: 'not a url' }, 'TOKEN_URL must be an absolute URL (got "not a url")'],
    [
      'BASE_URL',
      { BASE_URL: 'http://api.example.com' },
      'BASE_URL must be an https URL (http only on loopback) (got "http://api.example.com")',
    ],
    [
      'ACCOUNT_URL',
      { ACCOUNT_URL: 'https://other.example' },
      'BASE_URL and ACCOUNT_URL name the same host: they must be equal',
    ],
    [
      'API_URL',
      { API_URL: 'ftp://127.0.0.1' },
      'API_URL must be an https URL (http only on loopback) (got "ftp://127.0.0.1")',
    ],
    ['RETRIEVAL_URL', { RETRIEVAL_URL: '/relative' }, 'RETRIEVAL_URL must be an absolute URL (got "/relative")'],
    [
      'COLLECTOR_URL',
      { COLLECTOR_URL: 'http://first.iovation.com/' },
      'COLLECTOR_URL must be an https URL (http only on loopback) (got "http://first.iovation.com/")',
    ],
    [
      'ALLOWED_ORIGINS',
      { ALLOWED_ORIGINS: 'https://shop.example/checkout' },
      'ALLOWED_ORIGINS: "https://shop.example/checkout" is no origin (scheme://host[:port])',
    ],
    ['ORDER_SECRET', { ORDER_SECRET: 'short' }, 'ORDER_SECRET must be at least 32 characters (it has 5)'],
    [
      'DECISION_URL',
      { DECISION_URL: 'http://shop.example/hook' },
      'DECISION_URL must be an https URL (http only on loopback) (got its value)',
    ],
    [
      'WEBHOOK_SECRET',
      { WEBHOOK_SECRET: 'plain-secret-value' },
      'WEBHOOK_SECRET must be whsec_ followed by base64 (Standard Webhooks)',
    ],
    [
      'WEBHOOK_SECRET',
      { WEBHOOK_SECRET: 'whsec_c2hvcnQ=' },
      'WEBHOOK_SECRET must hold at least 16 bytes after whsec_ (it holds 5)',
    ],
    ['DECISIONS_TOKEN', { DECISIONS_TOKEN: 'abc' }, 'DECISIONS_TOKEN must be at least 32 characters (it has 3)'],
    [
      'CALLBACK_URL',
      { CALLBACK_URL: 'gateway/callback' },
      'CALLBACK_URL must be an absolute URL (got "gateway/callback")',
    ],
    [
      'CALLBACK_SOURCES',
      { CALLBACK_SOURCES: '10.0.0.0/33' },
      'CALLBACK_SOURCES must list addresses or CIDR ranges (got "10.0.0.0/33")',
    ],
    ['TRUSTED_FRONTS', { TRUSTED_FRONTS: 'nginx' }, 'TRUSTED_FRONTS must list addresses or CIDR ranges (got "nginx")'],
    ['REDIS_URL', { REDIS_URL: 'http://redis' }, 'REDIS_URL must be a redis:// or rediss:// URL'],
    ['PORT', { PORT: '80a' }, 'PORT must be a port number, 0 to 65535 (got "80a")'],
    ['PORT', { PORT: '65536' }, 'PORT must be a port number, 0 to 65535 (got "65536")'],
    ['ADMIN_PORT', { ADMIN_PORT: '-1' }, 'ADMIN_PORT must be a port number, 0 to 65535 (got "-1")'],
    ['ADMIN_PORT', { ADMIN_PORT: '8787' }, 'ADMIN_PORT must differ from PORT'],
    [
      'ADMIN_TOKEN',
      { ADMIN_PORT: '9000', ADMIN_TOKEN: 'short' },
      'ADMIN_TOKEN must be at least 32 characters (it has 5)',
    ],
    [
      'SHUTDOWN_TIMEOUT_MS',
      { SHUTDOWN_TIMEOUT_MS: '30s' },
      'SHUTDOWN_TIMEOUT_MS must be a number of milliseconds, 100 to 600000 (got "30s")',
    ],
    [
      'SHUTDOWN_DRAIN_MS',
      { SHUTDOWN_DRAIN_MS: '-1' },
      'SHUTDOWN_DRAIN_MS must be a number of milliseconds, 0 to 600000 (got "-1")',
    ],
    [
      'SHUTDOWN_DRAIN_MS',
      { SHUTDOWN_DRAIN_MS: '30000' },
      'SHUTDOWN_DRAIN_MS (30000) must be less than SHUTDOWN_TIMEOUT_MS (30000)',
    ],
    ['MAX_CONNECTIONS', { MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS must be a whole number, 1 to 1000000 (got "0")'],
    [
      'MAX_CONNECTIONS',
      { MAX_CONNECTIONS: '1000001' },
      'MAX_CONNECTIONS must be a whole number, 1 to 1000000 (got "1000001")',
    ],
    [
      'IDLE_TIMEOUT_MS',
      { IDLE_TIMEOUT_MS: '99' },
      'IDLE_TIMEOUT_MS must be a number of milliseconds, 100 to 600000 (got "99")',
    ],
  ];

  it('write the log as text unless LOG_FORMAT=json', () => {
    expect(parseSettings(GOOD).logFormat).toBe('text');
    expect(parseSettings({ ...GOOD, LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(parseSettings({ ...GOOD, LOG_FORMAT: 'text' }).logFormat).toBe('text');
  });

  it("take the time limits and the admin routes' names, with their defaults", () => {
    expect(parseSettings(GOOD)).toMatchObject({
      shutdownTimeoutMs: 30_000,
      shutdownDrainMs: 5000,
      idleTimeoutMs: 30_000,
    });
    expect(parseSettings({ ...GOOD, SHUTDOWN_DRAIN_MS: '0' }).shutdownDrainMs).toBe(0);
    expect(parseSettings(GOOD).maxConnections).toBe(10_000);
    expect(parseSettings({ ...GOOD, MAX_CONNECTIONS: '1' }).maxConnections).toBe(1);
    expect(parseSettings({ ...GOOD, MAX_CONNECTIONS: '1000000' }).maxConnections).toBe(1_000_000);
    expect(parseSettings({ ...GOOD, SHUTDOWN_TIMEOUT_MS: '600000', IDLE_TIMEOUT_MS: '100' })).toMatchObject({
      shutdownTimeoutMs: 600_000,
      idleTimeoutMs: 100,
    });
    expect(parseSettings({ ...GOOD, ADMIN_PORT: '9000' }).admin).toEqual({
      port: 9000,
      host: '127.0.0.1',
      hosts: ['localhost', '127.0.0.1', '[::1]'],
    });
    const token = 'the-bearer-of-the-admin-routes-32chars';
    expect(
      parseSettings({ ...GOOD, ADMIN_PORT: '9000', ADMIN_HOSTS: 'Status.Shop.Example, 10.0.0.5', ADMIN_TOKEN: token })
        .admin,
    ).toMatchObject({ hosts: ['status.shop.example', '10.0.0.5'], token });
  });
  it.each(BAD)('refuse a bad %s with one line naming it', (_name, change, line) => {
    const env = { ...GOOD, ...change };
    if ('REGION' in change) {
      delete (env as Record<string, string | undefined>).TOKEN_URL;
      delete (env as Record<string, string | undefined>).BASE_URL;
    }
    expect(problems(env)).toEqual([line]);
  });

  it("take DECISION_URL's user:pass@ out of the address, as HTTP Basic", () => {
    const settings = parseSettings({ ...GOOD, DECISION_URL: 'https://shop:p%40ss%20word@shop.example/hook?x=1' });
    expect(settings.decisionUrl).toBe('https://shop.example/hook?x=1');
    expect(settings.decisionAuthorization).toBe(`Basic ${Buffer.from('shop:p@ss word').toString('base64')}`);
    expect(parseSettings({ ...GOOD, DECISION_URL: 'https://token@shop.example/hook' }).decisionAuthorization).toBe(
      `Basic ${Buffer.from('token:').toString('base64')}`,
    );
    expect(parseSettings(GOOD).decisionAuthorization).toBeUndefined();
  });

  it('refuse REGION beside the addresses by hand, and half of the addresses', () => {
    expect(problems({ ...GOOD, REGION: 'US' })).toEqual(['REGION and TOKEN_URL/BASE_URL exclude each other: give one']);
    const { BASE_URL: _b, ...noBase } = GOOD;
    expect(problems(noBase)).toEqual(['BASE_URL is required with TOKEN_URL']);
    const { TOKEN_URL: _t, ...noToken } = GOOD;
    expect(problems(noToken)).toEqual(['TOKEN_URL is required with BASE_URL']);
  });

  it('never print a secret, even a malformed one', () => {
    const secrets = {
      CLIENT_SECRET: 'top-secret-client-value',
      ORDER_SECRET: 'top-secret-order',
      WEBHOOK_SECRET: 'top-secret-webhook',
      DECISIONS_TOKEN: 'top-secret-bearer',
      REDIS_URL: 'http://user:top-secret-redis@redis',
      DECISION_URL: 'http://shop:top-secret-decision@shop.example/hook',
      ADMIN_PORT: '9000',
      ADMIN_TOKEN: 'top-secret-admin',
    };
    const text = problems({ ...GOOD, ...secrets }).join('\n');
    expect(text).not.toBe('');
    for (const value of Object.values(secrets)) expect(text).not.toContain(value);
    expect(text).not.toContain('top-secret');
  });

  it('take a plain-http DECISION_URL between containers only with DECISION_URL_PLAIN_HTTP=private', () => {
    const between = ['http://shop:8000/webhook', 'http://10.1.2.3/webhook', 'http://172.20.0.5:8000/webhook'];
    const alsoPrivate = ['http://192.168.1.9/webhook', 'http://[fd00::5]/webhook', 'http://0x0a000001/webhook'];
    for (const DECISION_URL of [...between, ...alsoPrivate]) {
      expect(problems({ ...GOOD, DECISION_URL })).toEqual([
        'DECISION_URL must be an https URL (http only on loopback) (got its value)',
      ]);
      const allowed = parseSettings({ ...GOOD, DECISION_URL, DECISION_URL_PLAIN_HTTP: 'private' });
      expect(allowed.decisionUrl).toBe(DECISION_URL);
    }
    // Loopback and https stay as they were; a public host, a dotted name or another scheme is still refused.
    for (const DECISION_URL of ['http://127.0.0.1:8000/webhook', 'https://shop.example/webhook'])
      expect(parseSettings({ ...GOOD, DECISION_URL, DECISION_URL_PLAIN_HTTP: 'private' }).decisionUrl).toBe(
        DECISION_URL,
      );
    for (const DECISION_URL of ['http://shop.example/hook', 'http://8.8.8.8/hook', 'http://172.32.0.1/hook'])
      expect(problems({ ...GOOD, DECISION_URL, DECISION_URL_PLAIN_HTTP: 'private' })).toEqual([
        'DECISION_URL must be https, or http to a private address or a one-label name with DECISION_URL_PLAIN_HTTP=private (got its value)',
      ]);
    expect(problems({ ...GOOD, DECISION_URL: 'ftp://shop/hook', DECISION_URL_PLAIN_HTTP: 'private' })).toEqual([
      'DECISION_URL must be an https URL (http only on loopback) (got its value)',
    ]);
    // Any other value is refused, not read as unset.
    expect(problems({ ...GOOD, DECISION_URL_PLAIN_HTTP: 'yes' })).toEqual([
      'DECISION_URL_PLAIN_HTTP must be private, or unset (got "yes")',
    ]);
  });

  it('list every variable it reads, each with what it is for', () => {
    for (const [name, { kind, meaning }] of Object.entries(VARIABLES)) {
      expect(name).toMatch(/^[A-Z_]+$/);
      expect(['plain', 'secret']).toContain(kind);
      expect(meaning.length).toBeGreaterThan(10);
    }
  });
});

describe("the gateway's wiring of its settings", () => {
  // SETTINGS_WIRING is keyed by every member of GatewaySettings (the compiler names a new one);
  // this names an entry whose file does not read the setting.
  it.each(Object.entries(SETTINGS_WIRING))('%s is read where its entry says (%s)', (setting, where) => {
    const file = where.slice(0, where.indexOf(':'));
    expect(readFileSync(new URL(`../../src/gateway/${file}`, import.meta.url), 'utf8')).toMatch(
      new RegExp(`\\bsettings\\.${setting}\\b`),
    );
  });
});
