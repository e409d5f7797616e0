// `npm test`: every step runs, whatever an earlier one did, and each step's result and time
// is reported; the run fails at the end if any step failed. (Steps chained with && hid every
// result after the first failure.) A failed step's failure lines are printed again under the
// table: CI keeps only the tail of a long run, and the table alone said "built FAIL", not why.
import { spawn } from 'node:child_process';

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
// Lines that say what failed: vitest's and Playwright's failed tests and errors, tsc's and
// ESLint's errors. Kept to a bounded count per step.
const FAILURE_LINE =
  /(FAIL\b|[×✗✘]|Error\b|error TS\d+|\berror\b|Expected|Received|Timed? ?out|\bat .*\.(?:ts|mjs|js):\d+)/;
const KEPT_LINES = 60;
// eslint-disable-next-line no-control-regex -- colour codes are stripped from kept lines
const ANSI = /\u001b\[[0-9;]*m/g;

/** Runs one step, its output shown as it comes; resolves to its status and its failure lines. */
function runStep(command) {
  return new Promise((resolve) => {
    const child = spawn(command, { stdio: ['inherit', 'pipe', 'pipe'], shell: true });
    const kept = [];
    let partial = '';
    const keep = (chunk) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const plain = line.replace(ANSI, '');
        if (kept.length < KEPT_LINES && FAILURE_LINE.test(plain) && !/[✓✔]/.test(plain)) kept.push(plain);
      }
    };
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      keep(chunk);
    });
    child.stderr.on('data', (chunk) => {
      process.stderr.write(chunk);
      keep(chunk);
    });
    child.on('close', (status) => resolve({ status, kept }));
  });
}

// A step may be named to run alone or a few: `npm test -- unit e2e`.
const only = process.argv.slice(2);
const results = [];
for (const [name, command] of STEPS) {
  if (only.length && !only.includes(name)) continue;
  console.log(`\n=== ${name}: ${command}`);
  const started = Date.now();
  const { status, kept } = await runStep(command);
  results.push({ name, ok: status === 0, kept, seconds: Math.round((Date.now() - started) / 1000) });
  // Nothing after a failed build can test what was meant: the steps after it would test an old dist/.
  if (name === 'build' && status !== 0) break;
}
for (const { name, ok, kept } of results) {
  if (ok) continue;
  console.log(`\n--- what failed in ${name} (up to ${KEPT_LINES} lines; the whole output is above)`);
  for (const line of kept) console.log(line);
}
console.log('\n| step | result | seconds |\n|---|---|---:|');
for (const { name, ok, seconds } of results) console.log(`| ${name} | ${ok ? 'pass' : 'FAIL'} | ${seconds} |`);
const failed = results.filter((r) => !r.ok).length;
console.log(`\nsteps: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
