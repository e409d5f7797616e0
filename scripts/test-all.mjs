// `npm test`: every step runs, whatever an earlier one did, and each step's result and time
// is reported; the run fails at the end if any step failed. (Steps chained with && hid every
// result after the first failure.)
import { spawnSync } from 'node:child_process';

const STEPS = [
  ['build', 'npm run build --silent'],
  ['typecheck', 'npm run typecheck --silent'],
  ['lint', 'npm run lint --silent'],
  ['lint:package', 'npm run lint:package --silent'],
  ['unit', 'npm run test:unit --silent'],
  ['integration', 'npm run test:integration --silent'],
  ['built', 'npm run test:built --silent'],
  ['runtimes', 'npm run test:runtimes --silent'],
  ['e2e', 'npm run test:e2e --silent'],
  ['engines', 'npm run test:engines --silent'],
];
// A step may be named to run alone or a few: `npm test -- unit e2e`.
const only = process.argv.slice(2);
const results = [];
for (const [name, command] of STEPS) {
  if (only.length && !only.includes(name)) continue;
  console.log(`\n=== ${name}: ${command}`);
  const started = Date.now();
  const { status } = spawnSync(command, { stdio: 'inherit', shell: true });
  results.push({ name, ok: status === 0, seconds: Math.round((Date.now() - started) / 1000) });
  // Nothing after a failed build can test what was meant: the steps after it would test an old dist/.
  if (name === 'build' && status !== 0) break;
}
console.log('\n| step | result | seconds |\n|---|---|---:|');
for (const { name, ok, seconds } of results) console.log(`| ${name} | ${ok ? 'pass' : 'FAIL'} | ${seconds} |`);
const failed = results.filter((r) => !r.ok).length;
console.log(`\nsteps: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
