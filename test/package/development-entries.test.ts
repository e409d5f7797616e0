// Every browser entry that imports the package's core has a development build beside its
// production one, which imports the core's development build: under the `development` condition
// (a dev server, Node's --conditions=development) a page has one core, one loader run, whichever
// entries it imports.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/tarball.js';

type Target = { import?: { default?: string; development?: string } };
const exportsMap = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, Target> })
  .exports;
const text = (file: string) => readFileSync(join(ROOT, file), 'utf8');
/** A production file that imports the core: the entry, or the run's chunk. */
const importsCore = (code: string) => /["']\.\/(index\.js|browser-loader-run\.js)["']/.test(code);

const onCore = Object.entries(exportsMap).filter(([, target]) => {
  const file = target.import?.default;
  return file?.endsWith('.js') && existsSync(join(ROOT, file)) && importsCore(text(file));
});

describe('development builds of the entries on the core', () => {
  it('finds the entries that import the core (the check has something to check)', () => {
    expect(onCore.map(([subpath]) => subpath)).toEqual(
      expect.arrayContaining(['./lean', './element', './react', './vue', './svelte', './angular']),
    );
  });

  it.each(onCore)('%s has one, which imports the development core only', (_, target) => {
    const development = target.import?.development;
    expect(development).toMatch(/\.development\.js$/);
    const code = text(development!);
    expect(code).toMatch(/["']\.\/(index\.development\.js|browser-development-loader-run\.js)["']/);
    expect(importsCore(code)).toBe(false);
  });
});
