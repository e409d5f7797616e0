// The packed tarball, as a user installs it: types and runtime resolution for CommonJS and ES
// module projects (TypeScript node16 and bundler resolution), checked by tsc and by Node, and
// are-the-types-wrong on the same tarball.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fallbackFolders, fallbacks } from '../../scripts/subpath-fallbacks.mjs';
import { brokenLinks, documents } from '../support/readme.js';
import { installPackedTarball, ROOT } from '../support/tarball.js';

const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const ATTW = join(ROOT, 'node_modules/@arethetypeswrong/cli/dist/index.js');
let dir: string;
let tarball: string;

beforeAll(() => {
  ({ dir, tarball } = installPackedTarball('bbc-tarball-'));
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules/@types/node'), join(dir, 'node_modules/@types/node'));
  // The optional peer the React entry needs, as a React project has it.
  symlinkSync(join(ROOT, 'node_modules/react'), join(dir, 'node_modules/react'));
  // And the Vue entry's, as a Vue project has it (vue's own packages resolve where they are).
  symlinkSync(join(ROOT, 'node_modules/vue'), join(dir, 'node_modules/vue'));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const USE = `
import { captureBlackbox, isBlackboxCaptureError } from 'blackbox-capture';
import { captureBlackbox as captureLean, type LeanCaptureOptions } from 'blackbox-capture/lean';
import { createTokenSource, createFirstPartyProxy } from 'blackbox-capture/server';
import { startEmulator } from 'blackbox-capture/emulator';
import * as Umd from 'blackbox-capture/umd';
import { BlackboxCapture, useBlackbox, type BlackboxState } from 'blackbox-capture/vue';
import { blackboxStore, type BlackboxStore } from 'blackbox-capture/svelte';
// The tag in Vue's templates (vue-tsc reads GlobalComponents) beside the element's own globals.
import 'blackbox-capture/element';
import type { GlobalComponents } from 'vue';
import type { BlackboxCaptureProps } from 'blackbox-capture/vue';
const tagProps: BlackboxCaptureProps = { loaderUrl: '/l.js', checkoutId: 'cart-1', modelValue: '', onBlackbox: (e) => e.detail };
const tag: GlobalComponents['blackbox-capture'] | undefined = undefined;
const element: HTMLElementTagNameMap['blackbox-capture']['ready'] | undefined = undefined;
const capture: (options: { loaderUrl: string }) => Promise<string> = captureBlackbox;
const guard: (e: unknown) => boolean = isBlackboxCaptureError;
const lean: (options: LeanCaptureOptions) => Promise<string> = captureLean;
const ready: Promise<string> | undefined = Umd.ready;
const store: BlackboxStore = blackboxStore({ loaderUrl: '/l.js', checkoutId: 'cart-1' });
const composable: () => { readonly value: BlackboxState } = () => useBlackbox(() => ({ loaderUrl: '/l.js' }));
export { capture, guard, lean, ready, createTokenSource, createFirstPartyProxy, startEmulator, store, composable, BlackboxCapture, tagProps, tag, element };
`;

function project(name: string, type: 'commonjs' | 'module', compilerOptions: Record<string, unknown>): string {
  const folder = join(dir, name);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'package.json'), JSON.stringify({ name, private: true, type }));
  writeFileSync(join(folder, 'use.ts'), USE);
  writeFileSync(
    join(folder, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        target: 'ES2022',
        lib: ['ES2022', 'DOM'],
        types: ['node'],
        typeRoots: [join(dir, 'node_modules/@types')],
        ...compilerOptions,
      },
      files: ['use.ts'],
    }),
  );
  return folder;
}

describe('the packed tarball', () => {
  it.each([
    ['a CommonJS project, module node16', 'commonjs', { module: 'node16', moduleResolution: 'node16' }],
    ['an ES module project, module node16', 'module', { module: 'node16', moduleResolution: 'node16' }],
    ['a bundler project', 'module', { module: 'esnext', moduleResolution: 'bundler' }],
  ] as const)('type-checks in %s', (name, type, options) => {
    const folder = project(name.replace(/\W+/g, '-'), type, options);
    const result = spawnSync(process.execPath, [TSC, '-p', folder], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('loads with require() and with import, every entry, with the same exports', () => {
    const entries = [
      'blackbox-capture',
      'blackbox-capture/lean',
      'blackbox-capture/server',
      'blackbox-capture/emulator',
      'blackbox-capture/server/redis',
      'blackbox-capture/diagnose',
      'blackbox-capture/tcf',
      'blackbox-capture/element',
      'blackbox-capture/react',
      'blackbox-capture/react-jsx',
      // Not blackbox-capture/angular: Angular's own packages load only linked by an app's build
      // (or with its JIT compiler); test/package/angular.test.ts loads the entry in an app.
      'blackbox-capture/vue',
      // Svelte is not installed here: the store needs none of it.
      'blackbox-capture/svelte',
    ];
    const required = spawnSync(
      process.execPath,
      [
        '-e',
        `console.log(JSON.stringify(${JSON.stringify([...entries, 'blackbox-capture/umd'])}.map((e) => Object.keys(require(e)).sort())))`,
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(required.stderr).toBe('');
    const imported = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `console.log(JSON.stringify(await Promise.all(${JSON.stringify(entries)}.map(async (e) => Object.keys(await import(e)).sort()))))`,
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(imported.stderr).toBe('');
    const [browser, lean, server, emulator, redis, diagnose, tcf, element, react, reactJsx, vue, svelte, umd] =
      JSON.parse(required.stdout) as string[][];
    expect(JSON.parse(imported.stdout)).toEqual([
      browser,
      lean,
      server,
      emulator,
      redis,
      diagnose,
      tcf,
      element,
      react,
      reactJsx,
      vue,
      svelte,
    ]);
    expect(vue).toEqual(['BlackboxCapture', 'useBlackbox']);
    expect(svelte).toEqual(['blackboxStore']);
    expect(react).toEqual(['useBlackbox']);
    expect(reactJsx).toEqual([]); // types only
    expect(element).toEqual(['defineBlackboxCapture']); // and importing it on Node (a server) threw nothing
    expect(diagnose).toEqual(['diagnose']);
    expect(tcf).toEqual(['tcfConsent']);
    expect(redis).toEqual(['createRedisStore']);
    expect(browser).toEqual(['BlackboxCaptureError', 'captureBlackbox', 'isBlackboxCaptureError']);
    expect(umd).toEqual([...browser!, 'ready'].sort());
    expect(lean).toEqual(browser); // the same names: an import can switch entries
    expect(server).toContain('createCallbackHandler');
    expect(emulator).toContain('startEmulator');
  });

  it('records outcomes without @opentelemetry/api installed: nothing breaks, nothing is recorded', () => {
    const script = `
      import { createDeviceRiskHandler } from 'blackbox-capture/server';
      const client = { clientId: 'c', retrievalOrigin: 'https://r.example' };
      const handler = createDeviceRiskHandler({
    answer: 'checked', client, allowedOrigins: ['https://shop.example'], resolveCustomer: () => ({ customerInternalReference: 'c' }) });
      const response = await handler(new Request('https://shop.example/r', { method: 'POST', headers: { origin: 'https://shop.example', 'content-type': 'application/json' }, body: JSON.stringify({ outcome: { outcome: 'aborted', scripts: [], durationMs: 5 } }) }));
      await new Promise((r) => setTimeout(r, 50));
      console.log(response.status);
    `;
    const resolvable = spawnSync(
      process.execPath,
      ['-e', "try { require.resolve('@opentelemetry/api'); console.log('yes') } catch { console.log('no') }"],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(resolvable.stdout.trim()).toBe('no');
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: dir, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('202');
  });

  it('are-the-types-wrong finds nothing: node10, node16 (CommonJS and ESM) and bundler resolution', () => {
    // node10 (TypeScript's moduleResolution "node") reads no exports map: it finds the subpaths
    // through their fallback folders (scripts/subpath-fallbacks.mjs). The proxy recipes are
    // configuration, or files an app copies into its own tree, not modules it imports.
    const result = spawnSync(
      process.execPath,
      [
        ATTW,
        tarball,
        '--exclude-entrypoints',
        './proxy/nginx/iojs-http.conf',
        './proxy/nginx/iojs-location.conf',
        './proxy/nginx/iojs.js',
        './proxy/nginx/gateway.conf',
        './proxy/caddy/iojs.caddy',
        './proxy/caddy/gateway.caddy',
        './proxy/apache/iojs.conf',
        './proxy/apache/iojs.lua',
        './proxy/apache/gateway.conf',
        './proxy/haproxy/iojs.cfg',
        './proxy/haproxy/gateway.cfg',
        './proxy/nextjs/route.ts',
        './proxy/vercel/middleware.ts',
        './proxy/netlify/iojs.ts',
        './proxy/cloudfront/origin-request.mjs',
        './nginx/iojs-http.conf',
        './nginx/iojs-location.conf',
        // The gateway's OpenAPI document: JSON, not a module.
        './openapi.json',
        '--format',
        'json',
      ],
      { encoding: 'utf8' },
    );
    expect(result.status).toBe(0);
    const { problems } = JSON.parse(result.stdout) as {
      problems: Record<string, Array<{ entrypoint: string; resolutionKind: string }>>;
    };
    const found = Object.entries(problems).flatMap(([kind, list]) =>
      list.map((p) => `${kind} ${p.entrypoint} ${p.resolutionKind}`),
    );
    expect(found).toEqual([]);
  });

  it('ships the proxy recipes where docs/proxy.md says, the old nginx paths as aliases', () => {
    const resolve = createRequire(join(dir, 'use.cjs')).resolve;
    const shipped = (subpath: string) => readFileSync(resolve(`blackbox-capture/${subpath}`), 'utf8');
    for (const recipe of [
      'nginx/iojs-http.conf',
      'nginx/iojs-location.conf',
      'nginx/iojs.js',
      'nginx/gateway.conf',
      'caddy/iojs.caddy',
      'caddy/gateway.caddy',
      'apache/iojs.conf',
      'apache/iojs.lua',
      'apache/gateway.conf',
      'haproxy/iojs.cfg',
      'haproxy/gateway.cfg',
      'nextjs/route.ts',
      'vercel/middleware.ts',
      'netlify/iojs.ts',
      'cloudfront/origin-request.mjs',
    ])
      expect(shipped(`proxy/${recipe}`)).toBe(readFileSync(join(ROOT, 'proxy', recipe), 'utf8'));
    // The recipes' type check (npm run typecheck) stays in the checkout.
    expect(execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' })).not.toContain('proxy/tsconfig.json');
    for (const name of ['iojs-http.conf', 'iojs-location.conf'])
      expect(resolve(`blackbox-capture/nginx/${name}`)).toBe(resolve(`blackbox-capture/proxy/nginx/${name}`));
  });

  it('has a fallback folder for every subpath, listed in files and ignored by git', () => {
    const listed = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n');
    for (const { folder, manifest } of fallbacks()) {
      expect(listed).toContain(`package/${folder}/package.json`);
      expect(
        JSON.parse(readFileSync(join(dir, 'node_modules/blackbox-capture', folder, 'package.json'), 'utf8')),
      ).toEqual(manifest);
      // Each field names a file the tarball has.
      for (const path of Object.values(manifest)) expect(listed).toContain(`package/${join(folder, path)}`);
    }
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).files).toEqual(
      expect.arrayContaining(fallbackFolders()),
    );
    // Written by the build, never committed.
    for (const folder of fallbackFolders())
      expect(spawnSync('git', ['check-ignore', '-q', `${folder}/package.json`], { cwd: ROOT }).status).toBe(0);
  });

  // The README on npm's page, in node_modules and on CDNs that browse the tarball links into
  // docs/ with relative links: they resolve only if the tarball has what they name.
  it('has every document the README links to: each relative link and heading resolves inside it', () => {
    const packed = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' })
      .split('\n')
      .filter((path) => path.endsWith('.md'))
      .map((path) => path.replace(/^package\//, ''));
    expect(packed).toEqual(expect.arrayContaining(documents()));
    // The screenshots stay in the repository (GitHub shows them by their relative paths, which
    // test/docs/readme.test.ts checks there): the tarball carries no picture.
    const broken = brokenLinks(join(dir, 'node_modules/blackbox-capture'), packed);
    expect(broken.filter((line) => !/\.png \(no such file\)$/.test(line))).toEqual([]);
    expect(broken.length).toBeGreaterThan(0);
  });

  it("carries no PNG: the screenshots are the repository's, not the package's", () => {
    const listed = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n');
    expect(listed.filter((path) => /\.png$/i.test(path))).toEqual([]);
    // What it carries of docs/: the documents.
    expect(listed.filter((path) => path.startsWith('package/docs/') && !path.endsWith('.md'))).toEqual([]);
    // 0.64 MB packed without them, 1.42 MB with them.
    expect(statSync(tarball).size).toBeLessThan(1024 * 1024);
  });

  it('names its repository, home page and issue tracker, all three at the same place', () => {
    const { repository, homepage, bugs } = JSON.parse(
      readFileSync(join(dir, 'node_modules/blackbox-capture/package.json'), 'utf8'),
    ) as { repository?: { type: string; url: string }; homepage?: string; bugs?: string };
    expect(repository).toEqual({
      type: 'git',
      url: expect.stringMatching(/^git\+https:\/\/github\.com\/[\w.-]+\/[\w.-]+\.git$/) as string,
    });
    const home = repository!.url.replace(/^git\+/, '').replace(/\.git$/, '');
    expect(homepage).toBe(`${home}#readme`);
    expect(bugs).toBe(`${home}/issues`);
  });
});
