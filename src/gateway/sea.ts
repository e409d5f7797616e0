/**
 * The gateway as a single executable (Node's single executable applications, built by
 * scripts/sea.mjs): `blackbox-capture-gateway [--env-file <path>]…` and
 * `blackbox-capture-gateway healthcheck`, `serve` without the command's name (its usage says
 * the executable's own), the OpenAPI document from the executable's assets. No REDIS_URL: the
 * fleet's packages (bullmq, ioredis) are not in it; one instance keeps DATA_DIR.
 */
import { basename } from 'node:path';
import { getAsset } from 'node:sea';
import { serve } from './cli.js';

// In a single executable, argv[1] is the executable again: the arguments follow.
const name = basename(process.execPath);
serve(process.argv.slice(2), { openApi: () => getAsset('openapi.json', 'utf8') }, name).catch((error: Error) => {
  console.error(`${name}: ${error.message}`);
  process.exit(1);
});
