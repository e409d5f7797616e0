// blackbox-capture/react-jsx's built declarations, as an app's TypeScript sees them: the tag in
// React 19's JSX (tsc on .tsx pages, `jsx: react-jsx`), beside the element entry's own types
// without a clash, and the element entry alone free of any React type.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
// Inside the package's folder, so that `react/jsx-runtime` resolves from the pages.
const dir = join(ROOT, '.scratch', `react-jsx-types-${process.pid}`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PAGES = {
  good: `
import { useRef } from 'react';
export function Checkout({ cart }: { cart: string }) {
  const capture = useRef<HTMLElementTagNameMap['blackbox-capture']>(null);
  return (
    <form onSubmit={async () => capture.current && (await capture.current.ready)}>
      <blackbox-capture
        ref={capture}
        name="blackbox"
        loader-url="/static/vendor/loader.js"
        post-url="/device-risk"
        checkout-id={cart}
        max-wait-ms={3000}
        onblackboxoutcome={(event) => console.log(event.detail.outcome)}
      />
    </form>
  );
}`,
  bad: `
export const a = <blackbox-capture name="blackbox" />;
export const b = <blackbox-capture loader-url="/l.js" consent="yes" />;
export const c = <blackbox-capture loader-url="/l.js" loaderUrl="/l.js" />;`,
};

/** tsc's diagnostics, by page: one program for all (tsc's start is most of its time). */
const diagnostics = (() => {
  let checked: Record<string, string> | undefined;
  return (page: keyof typeof PAGES): string => {
    if (!checked) {
      mkdirSync(dir, { recursive: true });
      const dist = (entry: string) => JSON.stringify(join(ROOT, 'dist', entry));
      const files = Object.entries(PAGES).map(([name, source]) => {
        const file = join(dir, `${name}.tsx`);
        writeFileSync(file, `import type {} from ${dist('react-jsx.js')};\nimport ${dist('element.js')};\n${source}\n`);
        return file;
      });
      const flags = ['--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--lib', 'es2022,dom'];
      const module = ['--jsx', 'react-jsx', '--module', 'esnext', '--moduleResolution', 'bundler', '--pretty', 'false'];
      const run = spawnSync(process.execPath, [TSC, ...flags, ...module, ...files], { encoding: 'utf8' });
      const lines = (run.stdout + run.stderr).split('\n');
      checked = Object.fromEntries(
        Object.keys(PAGES).map((name) => [name, lines.filter((line) => line.includes(`${name}.tsx`)).join('\n')]),
      );
    }
    return checked[page]!;
  };
})();

describe('dist/react-jsx.d.ts', () => {
  it('types the tag in JSX: attributes, a ref to the element, its events; no clash with the element entry', () => {
    expect(diagnostics('good')).toBe('');
  });

  it('refuses what the tag does not allow: no loader-url, a consent that is not tcf:<id>, an unknown attribute', () => {
    const out = diagnostics('bad');
    expect(out).toContain("Property ''loader-url'' is missing");
    expect(out).toContain('"yes"');
    expect(out).toMatch(
      /bad\.tsx\(6,\d+\): error TS2322: .*loaderUrl.* is not assignable to type 'BlackboxCaptureProps'/,
    );
  });

  it('the element entry alone names no React type: a page without React needs no @types/react', () => {
    expect(readFileSync(join(ROOT, 'dist/element.d.ts'), 'utf8')).not.toMatch(/['"]react['"]|React\./);
  });
});
