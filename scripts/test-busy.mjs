// `npm run test:busy`: the whole `npm test` while other processes keep every core busy (one
// busy loop per core, started and stopped here), a few times in a row, as CI's busy machine
// runs it. `npm run test:busy -- 1` runs it once. Prints each run's time and result.
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

const times = Number(process.argv[2] ?? 3);
const loops = Array.from({ length: availableParallelism() }, () =>
  spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
);
const stop = () => loops.forEach((loop) => loop.kill('SIGKILL'));
process.on('exit', stop);
process.on('SIGINT', () => process.exit(130));

const runs = [];
for (let i = 1; i <= times; i++) {
  console.log(`\n##### busy run ${i} of ${times} (${loops.length} busy loops)`);
  const started = Date.now();
  const { status } = spawnSync('npm', ['test'], { stdio: 'inherit' });
  runs.push({ ok: status === 0, minutes: ((Date.now() - started) / 60_000).toFixed(1) });
}
stop();
for (const [i, run] of runs.entries())
  console.log(`busy run ${i + 1}: ${run.ok ? 'pass' : 'FAIL'} in ${run.minutes} min`);
const failed = runs.filter((r) => !r.ok).length;
console.log(`busy runs: ${runs.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
