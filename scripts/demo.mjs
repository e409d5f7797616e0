// `npm run demo`: builds only when the build is older than its sources (saying so while it
// works), then starts the demo. A second start with nothing changed skips the build.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

// Outside dist/, which is packed: the time of the last complete `npm run build`.
const STAMP = 'node_modules/.cache/blackbox-capture/build-stamp';
const INPUTS = [
  'src',
  'demo',
  'rollup.config.mjs',
  'tsconfig.json',
  'tsconfig.declarations.json',
  'package.json',
  'scripts/build.mjs',
  'scripts/subpath-fallbacks.mjs',
];

/** The newest modification time under `path`. */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(
    stat.mtimeMs,
    ...readdirSync(path).map((name) => (name === 'screenshots' ? 0 : newest(join(path, name)))),
  );
}

const run = (command) => {
  const { status } = spawnSync(command, { stdio: 'inherit', shell: true });
  if (status !== 0) process.exit(status ?? 1);
};

// `npm run build` ends with `node scripts/demo.mjs --stamp`: it records the build and stops there.
if (process.argv[2] === '--stamp') {
  mkdirSync(dirname(STAMP), { recursive: true });
  writeFileSync(STAMP, '');
  process.exit(0);
}

const built = existsSync(STAMP) && existsSync('dist/index.js') ? statSync(STAMP).mtimeMs : 0;
if (built > Math.max(...INPUTS.map(newest))) {
  console.log('blackbox-capture demo: the build is up to date (dist/); starting.');
} else {
  console.log('blackbox-capture demo: building the package into dist/ (about 20 s on a 2-core machine; once only)…');
  const started = Date.now();
  run('npm run build --silent');
  console.log(`blackbox-capture demo: built in ${Math.round((Date.now() - started) / 1000)} s; starting.`);
}
run('npm run demo:start --silent');
