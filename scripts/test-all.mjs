// `npm test`: every step runs, whatever an earlier one did, and each step's result and time
// is reported; the run fails at the end if any step failed. (Steps chained with && hid every
// result after the first failure.) A failed step's failure lines are printed again under the
// table: CI keeps only the tail of a long run, and the table alone said "built FAIL", not why.
import { spawn } from 'node:child_process';

// Steps in one inner list run side by side, their output held and printed whole as each ends:
// typecheck and lint each keep one core busy for most of a minute, and need only the build.
const STEPS = [
  ['build', 'npm run build --silent'],
  [
    ['typecheck', 'npm run typecheck --silent'],
    ['lint', 'npm run lint --silent'],
    ['lint:package', 'npm run lint:package --silent'],
  ],
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

/**
 * Runs one step, its output shown as it comes (or held until it ends, with `held`); resolves
 * to its status, its failure lines and its seconds.
 */
function runStep(title, command, held = false) {
  if (!held) console.log(title);
  const started = Date.now();
  const write = held ? (stream, chunk) => output.push([stream, chunk]) : (stream, chunk) => stream.write(chunk);
  const output = [];
  return new Promise((resolve) => {
    const child = spawn(command, { stdio: ['ignore', 'pipe', 'pipe'], shell: true });
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
      write(process.stdout, chunk);
      keep(chunk);
    });
    child.stderr.on('data', (chunk) => {
      write(process.stderr, chunk);
      keep(chunk);
    });
    child.on('close', (status) => {
      if (held) console.log(title);
      for (const [stream, chunk] of output) stream.write(chunk);
      resolve({ status, kept, seconds: Math.round((Date.now() - started) / 1000) });
    });
  });
}

// A step may be named to run alone or a few: `npm test -- unit e2e`.
const only = process.argv.slice(2);
const results = [];
for (const group of STEPS.map((step) => (Array.isArray(step[0]) ? step : [step]))) {
  const chosen = group.filter(([name]) => !only.length || only.includes(name));
  if (chosen.length === 0) continue;
  const held = chosen.length > 1;
  if (held) console.log(`\n=== side by side: ${chosen.map(([name]) => name).join(', ')}`);
  const ran = await Promise.all(
    chosen.map(([name, command]) =>
      runStep(`\n=== ${name}: ${command}`, command, held).then((result) => ({
        name,
        ok: result.status === 0,
        ...result,
      })),
    ),
  );
  results.push(...ran);
  // Nothing after a failed build can test what was meant: the steps after it would test an old dist/.
  if (ran.some(({ name, ok }) => name === 'build' && !ok)) break;
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
