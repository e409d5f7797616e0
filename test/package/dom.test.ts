// @vitest-environment happy-dom
// The built ESM file in a DOM, against the emulated loader: the same flow as the sources.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import { freshPage, LOADER_URL } from '../support/vendor-dom.js';

const require = createRequire(import.meta.url);

describe('dist/index.js in a DOM', () => {
  it('captures the final blackbox', async () => {
    await freshPage();
    const dist = await import('../../dist/index.js' as string);
    const bb: string = await dist.captureBlackbox({ loaderUrl: LOADER_URL });
    expect(decodeBlackbox(bb)?.sources).toHaveLength(3);
  });

  it('writes error messages from its messages chunk', async () => {
    await freshPage();
    const dist = await import('../../dist/index.js' as string);
    const error = await dist.captureBlackbox({ loaderUrl: 'http://evil.example/loader.js' }).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'invalid_option' });
    expect(error.message).toBe(
      '[blackbox-capture] Invalid option "loaderUrl": expected an https URL or a path on the page\'s origin, received "http://evil.example/loader.js".',
    );
  });

  it('the development build captures too, and refuses what only it checks', async () => {
    await freshPage();
    const dist = await import('../../dist/index.development.js' as string);
    const error = await dist.captureBlackbox({ loaderUrl: LOADER_URL, timeoutMs: -5 }).catch((e: Error) => e);
    expect(error.message).toBe(
      '[blackbox-capture] Invalid option "timeoutMs": expected a number of milliseconds from 1 to 600000, received -5.',
    );
    const bb: string = await dist.captureBlackbox({ loaderUrl: LOADER_URL });
    expect(decodeBlackbox(bb)?.sources).toHaveLength(3);
  });
});

describe('what each build holds', () => {
  const { readdirSync, readFileSync } = require('node:fs') as typeof import('node:fs');
  const { join } = require('node:path') as typeof import('node:path');
  // A path, not a URL: the DOM's URL class is not the one node:fs knows.
  const DIST = join(__dirname, '..', '..', 'dist');
  // The files a page or a browser bundler loads: the entries, their chunks and the UMD files.
  const browserFiles = readdirSync(DIST).filter((f) =>
    /^(index|browser-|blackbox-capture|diagnose|tcf|element)[\w.-]*\.c?js$/.test(f),
  );
  const text = (file: string) => readFileSync(join(DIST, file), 'utf8');
  /** A file and the chunks it imports up front (the entries share theirs: the page's run, its rules). */
  const loaded = (file: string): string => {
    const code = text(file);
    // Static imports only: a chunk loaded later is `import("./x.js")`, or in CommonJS `()=>require("./x.cjs")`.
    const imported = [...code.matchAll(/(?:\bfrom|\bimport|(?<!=>)\brequire\()\s*["']\.\/([^"']+)["']/g)].map(
      (m) => m[1]!,
    );
    return [code, ...imported.map(loaded)].join('\n');
  };

  it('no browser file mentions process (a raw <script type="module"> has none)', () => {
    expect(browserFiles.length).toBeGreaterThanOrEqual(28);
    for (const file of browserFiles) expect(text(file), file).not.toMatch(/\bprocess\b/);
  });

  it.each([
    ['unknown option names', 'unknown_option'],
    ['the version rule', 'general5|early5'],
    ['the warning of a page without a preconnect hint', 'no preconnect hint'],
    ['the warning of a relative uriHook', 'is relative'],
  ])('%s are in the development files only', (_, marker) => {
    for (const file of ['index.development.js', 'index.development.cjs', 'blackbox-capture.development.umd.js'])
      expect(loaded(file), file).toContain(marker);
    for (const file of ['index.js', 'index.cjs', 'blackbox-capture.umd.js'])
      expect(loaded(file), file).not.toContain(marker);
  });

  it("the production files warn of one thing, the script tag kept in <head> (its text is the messages chunk's)", () => {
    expect(text('index.js')).not.toContain('console.warn');
    expect(text('blackbox-capture.umd.js').match(/console\.warn/g)).toHaveLength(1);
    expect(text('blackbox-capture.umd.js')).toContain('turbo:load');
    expect(text('blackbox-capture.umd.js')).not.toContain('stays empty');
    expect(text('browser-messages.js')).toContain('stays empty');
  });
});
