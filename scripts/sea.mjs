#!/usr/bin/env node
// `node scripts/sea.mjs [<output>]`: the gateway as a single executable (Node's single
// executable applications: src/gateway/sea.ts bundled by esbuild into one CommonJS file, the
// OpenAPI document as an asset, `node --build-sea` on this Node), runnable where Node is not
// installed. Default output .build/sea/blackbox-capture-gateway. About 150 MB: it is Node.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const output = resolve(process.argv[2] ?? '.build/sea/blackbox-capture-gateway');
const work = dirname(output);
mkdirSync(work, { recursive: true });
const run = (command, args) => {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`sea: ${[command, ...args].join(' ')} failed (exit ${result.status})`);
    process.exit(1);
  }
};
const bundle = `${output}.cjs`;
await build({
  entryPoints: ['src/gateway/sea.ts'],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  // The fleet's packages stay out (no REDIS_URL in the executable); import.meta is only read
  // for the OpenAPI document beside the module, which the executable takes from its asset.
  external: ['ioredis', 'bullmq'],
  logOverride: { 'empty-import-meta': 'silent' },
  logLevel: 'warning',
  outfile: bundle,
});
const config = `${output}.sea-config.json`;
writeFileSync(
  config,
  JSON.stringify({
    main: bundle,
    output,
    disableExperimentalSEAWarning: true,
    assets: { 'openapi.json': resolve('src/gateway/openapi.json') },
  }),
);
run(process.execPath, ['--build-sea', config]);
console.log(`sea: ${output}`);
