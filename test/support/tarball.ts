// The packed tarball, installed as npm would: its package/ folder as
// node_modules/blackbox-capture in a fresh folder, for the tests of what users install.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A writer of the files of a test's app in `dir`: `write(file, text)` makes the file's folders first. */
export const writerIn =
  (dir: string) =>
  (file: string, text: string): void => {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  };

/** Packs the package into a fresh folder (`prefix` names it) and installs it there; the caller removes `dir`. */
export function installPackedTarball(prefix: string): { dir: string; tarball: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const tarball = join(
    dir,
    readdirSync(dir).find((f) => f.endsWith('.tgz'))!,
  );
  const installed = join(dir, 'node_modules', 'blackbox-capture');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['xzf', tarball, '-C', installed, '--strip-components=1']);
  // Its dependencies, as npm would install them (theirs resolve from where they really are).
  const { dependencies = {}, bin = {} } = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    bin?: Record<string, string>;
  };
  for (const name of Object.keys(dependencies))
    symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
  // Its commands, linked in node_modules/.bin as npm links them (so that `npx` finds them).
  mkdirSync(join(dir, 'node_modules', '.bin'));
  for (const [name, file] of Object.entries(bin))
    symlinkSync(join('..', 'blackbox-capture', file), join(dir, 'node_modules', '.bin', name));
  return { dir, tarball };
}
