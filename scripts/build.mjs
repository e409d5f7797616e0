#!/usr/bin/env node
// `npm run build`: dist/ from src/, saying what it does and how long each part took.
// - tsc writes the declarations of all of src once (.build/types) while rollup builds the
//   JavaScript files: two processes, one per core;
// - then rollup rolls up one declaration file per entry from .build/types;
// - then the subpath fallbacks, the command files' mode, the size table and the demo's stamp.
// Types are checked by `npm run typecheck` (a step of `npm test`), not by the build.
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, rmSync } from 'node:fs';

const quiet = process.argv.includes('--quiet');
const say = (text) => {
  if (!quiet) console.log(`build: ${text}`);
};

/** Runs a command; resolves with its output, rejects (printing the output) when it fails. */
function run(label, command, args) {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        process.stderr.write(output);
        reject(new Error(`${label} failed (exit ${code})`));
        return;
      }
      say(`${label} ${((Date.now() - started) / 1000).toFixed(1)} s`);
      resolve(output);
    });
  });
}

const node = process.execPath;
const bin = (name) => `node_modules/${name}`;
const started = Date.now();
try {
  rmSync('dist', { recursive: true, force: true });
  rmSync('.build/types', { recursive: true, force: true });
  say('the JavaScript files (rollup) and the types (tsc), side by side…');
  await Promise.all([
    run('JavaScript files', node, [bin('rollup/dist/bin/rollup'), '-c', '--silent', '--configPart', 'code']),
    run('types', node, [bin('typescript/bin/tsc'), '-p', 'tsconfig.declarations.json']),
  ]);
  await run('declaration files', node, [
    bin('rollup/dist/bin/rollup'),
    '-c',
    '--silent',
    '--configPart',
    'declarations',
  ]);
  await run('subpath fallbacks', node, ['scripts/subpath-fallbacks.mjs']);
  for (const command of ['emulator-cli', 'cli']) chmodSync(`dist/${command}.js`, 0o755);
  // The gateway's OpenAPI document, beside the chunk that serves it (src/gateway/extra-routes.ts).
  copyFileSync('src/gateway/openapi.json', 'dist/openapi.json');
  const sizes = await run('sizes', node, ['scripts/size.mjs']);
  if (!quiet) process.stdout.write(sizes);
  await run('stamp', node, ['scripts/demo.mjs', '--stamp']);
  say(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (error) {
  console.error(`build: ${error.message}`);
  process.exit(1);
}
