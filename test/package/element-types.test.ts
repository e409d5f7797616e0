// The element entry's built declarations, as a page's TypeScript sees them: the tag in
// HTMLElementTagNameMap and in Svelte's template types, from dist/element.d.ts alone.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const dir = mkdtempSync(join(tmpdir(), 'element-types-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** tsc's diagnostics for `source`, a page's module importing the built element entry. */
function check(source: string): string {
  const file = join(dir, `page-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(file, `import ${JSON.stringify(join(ROOT, 'dist/element.js'))};\n${source}\n`);
  const flags = ['--noEmit', '--strict', '--target', 'es2022', '--lib', 'es2022,dom'];
  const run = spawnSync(
    process.execPath,
    [TSC, ...flags, '--module', 'esnext', '--moduleResolution', 'bundler', file],
    {
      encoding: 'utf8',
    },
  );
  return run.stdout + run.stderr;
}

describe('dist/element.d.ts', () => {
  it('types the tag: createElement, querySelector, value, state, ready; Svelte attributes', () => {
    expect(
      check(`
const element = document.createElement('blackbox-capture');
const ready: Promise<string> = element.ready;
const state: 'collecting' | 'complete' | 'degraded' | 'failed' = document.querySelector('blackbox-capture')!.state;
element.value = element.value;
const svelte: svelteHTML.IntrinsicElements['blackbox-capture'] = { 'loader-url': '/l.js', 'checkout-id': 'c-1' };
export { ready, state, svelte };`),
    ).toBe('');
  });

  it('refuses what the element does not allow', () => {
    const out = check(`
document.createElement('blackbox-capture').state = 'complete';
const svelte: svelteHTML.IntrinsicElements['blackbox-capture'] = { consent: 'yes' };
export { svelte };`);
    expect(out).toContain("Cannot assign to 'state'");
    expect(out).toContain('"yes"');
  });
});
