/**
 * Demo configuration from the environment. With nothing set, the built-in
 * emulator plays the vendor and the service; each group of variables switches
 * its side to real addresses.
 */
// The regions are the server kit's table's (src/server/api/regions.ts): a new region is one row there.
import { isRegion, REGION_NAMES, type Region } from '../src/server/api/regions.js';

export interface DemoConfig {
  host: string;
  port: number;
  /** Vendor side: unset means the emulator's. */
  loaderUrl?: string;
  collectorUrl?: string;
  /** Service side: unset clientId means the emulator's. */
  clientId?: string;
  clientSecret?: string;
  region?: Region;
  tokenUrl?: string;
  apiBaseUrl?: string;
  workflowKey: string;
  userAgent: string;
}

export const ENVIRONMENT = {
  DEMO_HOST: 'address to listen on (default 127.0.0.1)',
  DEMO_PORT: 'port of the demo site (default 4173; 0 picks a free one)',
  LOADER_URL: "the vendor loader script (default: the emulator's)",
  COLLECTOR_URL:
    "the vendor's first-party host behind /iojs, e.g. https://ci-first.iovation.com/ (default: the emulator's)",
  CLIENT_ID: 'OAuth2 client id (default: the emulator)',
  CLIENT_SECRET: 'OAuth2 client secret',
  API_REGION: `${REGION_NAMES.join(', ')}: picks the token and API hosts`,
  TOKEN_URL: 'token endpoint, instead of API_REGION',
  API_BASE_URL: 'REST API base address, instead of API_REGION',
  WORKFLOW_KEY: 'workflow definition key that includes Device Risk (default 10011)',
  USER_AGENT: 'User-Agent naming your company and app (default "blackbox-capture-demo/0.1")',
} as const;

export function configFromEnvironment(env: NodeJS.ProcessEnv = process.env): DemoConfig {
  const region = env.API_REGION?.toUpperCase();
  if (region !== undefined && !isRegion(region)) {
    throw new Error(`API_REGION must be one of ${REGION_NAMES.join(', ')}, not ${JSON.stringify(env.API_REGION)}`);
  }
  if (env.CLIENT_ID && !env.CLIENT_SECRET) throw new Error('CLIENT_ID is set but CLIENT_SECRET is not');
  if (env.CLIENT_ID && !region && !(env.TOKEN_URL && env.API_BASE_URL)) {
    throw new Error('with CLIENT_ID, set API_REGION (or both TOKEN_URL and API_BASE_URL)');
  }
  const port = env.DEMO_PORT === undefined ? 4173 : Number(env.DEMO_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`DEMO_PORT must be a port number, not ${JSON.stringify(env.DEMO_PORT)}`);
  return {
    host: env.DEMO_HOST ?? '127.0.0.1',
    port,
    workflowKey: env.WORKFLOW_KEY ?? '10011',
    userAgent: env.USER_AGENT ?? 'blackbox-capture-demo/0.1',
    ...(env.LOADER_URL ? { loaderUrl: env.LOADER_URL } : {}),
    ...(env.COLLECTOR_URL ? { collectorUrl: env.COLLECTOR_URL } : {}),
    ...(env.CLIENT_ID ? { clientId: env.CLIENT_ID, clientSecret: env.CLIENT_SECRET } : {}),
    ...(region ? { region } : {}),
    ...(env.TOKEN_URL ? { tokenUrl: env.TOKEN_URL } : {}),
    ...(env.API_BASE_URL ? { apiBaseUrl: env.API_BASE_URL } : {}),
  };
}
