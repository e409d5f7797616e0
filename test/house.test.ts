// The house rules that a tool can check: commit subjects of at most 72 characters (from the
// commit that set the rule on), a changeset folder that changesets can read, a README short
// enough to read, no function in src/ too long to hold in the head, no import of the Node
// adapter from code for every runtime, and no document or comment naming a file that is not there.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('..', import.meta.url);
const ROOT_PATH = fileURLToPath(ROOT);
/** The first commit made under the rule; the history before it stays as it was written. */
const RULE_FROM = '493b524';
/** The README is for users: the reference lives in docs/. */
const README_MAX_LINES = 250;

/** src/server's own root: the entries and the lists every folder reads; the rest in folders that say what they hold. */
const SERVER_ROOT_MAX_FILES = 8;

/** A function longer than this is not one to hold in the head: cut it by operation. */
const FUNCTION_MAX_LINES = 150;

/** Folders the checkout's own tools write or download into: not the repository's files. */
const NOT_SOURCES = new Set(['node_modules', '.git', 'dist', '.build', '.demo', '.stryker-tmp', 'reports']);
const walk = (dir: string): string[] =>
  readdirSync(join(ROOT_PATH, dir), { withFileTypes: true }).flatMap((entry) =>
    NOT_SOURCES.has(entry.name) || entry.name.endsWith('-results') || entry.name === 'playwright-report'
      ? []
      : entry.isDirectory()
        ? walk(join(dir, entry.name))
        : [join(dir, entry.name)],
  );
/** A path from the package root, in the folders the repository has: `src/server/net/http.ts`, `docs/`. */
const ROOT_PATHS = /(?<![\w/.@:-])(?:src|test|e2e|engines|scripts|docs|bench|demo|runtimes|proxy|\.ci)\/[\w./-]*[\w/]/g;
/** A file name alone (`http.ts`): in a comment, it names a file of the repository. */
const FILE_NAMES = /(?<![\w.@/-])[\w-]+(?:\.[\w-]+)*\.(?:ts|mjs|md)\b/g;
const proseOf = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, '');
const commentsOf = (code: string) => [...code.matchAll(/\/\/.*|\/\*[\s\S]*?\*\//g)].map((m) => m[0]).join('\n');

/** Every root path in `texts` (name → text) that does not exist, as `name: path`. */
export function missingPaths(texts: Map<string, string>, exists: (path: string) => boolean): string[] {
  return [...texts].flatMap(([name, text]) =>
    [...text.matchAll(ROOT_PATHS)]
      // A glob (`test/browser/capture*`) names files of its folder: the folder must exist.
      .map(({ 0: path, index }) => (text[index + path.length] === '*' ? dirname(path) : path))
      .filter((path) => !exists(path))
      .map((path) => `${name}: ${path}`),
  );
}

/** Every function of `code` (declarations, expressions, arrows, methods) over `maxLines`, as `file:name:lines`. */
export function longFunctions(file: string, code: string, maxLines = FUNCTION_MAX_LINES): string[] {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest, true);
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line;
  const long: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart(source)) + 1;
      // An arrow or a function expression is named by what holds it: `const arrow = () => …`.
      const holder =
        ts.isVariableDeclaration(node.parent) ||
        ts.isPropertyAssignment(node.parent) ||
        ts.isPropertyDeclaration(node.parent)
          ? node.parent
          : undefined;
      const name = (node.name ?? holder?.name)?.getText(source) ?? '(anonymous)';
      if (lines > maxLines) long.push(`${file}:${name}:${lines}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return long;
}

/**
 * The rule for the server's message texts, and why. The browser's words sit in
 * src/browser/messages.ts because that module is a lazy chunk: a checkout page pays no byte for
 * them until something fails (the size budgets). The server has no such cost, so a message
 * beside the code that throws it is fine, read where it is said; src/server/messages.ts keeps
 * the words it already holds (several modules say the same, the prefix) as long as each is
 * said somewhere. What holds wherever a text is written: it reaches the reader on an error with
 * a stable `code` (DeviceRiskError, a refusal's code), never on a plain Error, since callers and
 * tests match the code, not the words (docs/server.md#errors).
 */

/** Texts given to an error that carries no code (`new Error(…)`, `TypeError`, `RangeError`), as `file:line`. */
export function codelessMessages(file: string, code: string): string[] {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest, true);
  const isText = (node: ts.Node) =>
    (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) &&
    /[a-z] [a-z]/i.test(node.getText(source));
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isNewExpression(node) && /^(Error|TypeError|RangeError)$/.test(node.expression.getText(source)))
      for (const argument of node.arguments ?? [])
        if (isText(argument))
          found.push(`${file}:${source.getLineAndCharacterOfPosition(argument.getStart(source)).line + 1}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * The entries of `messages` (a module of `export const group = { key: … }` tables) that no
 * module of `sources` says, as `group.key`: a text whose throw is gone misleads its reader.
 * A module may import a group under another name (`callbackMessages as say`).
 */
export function deadMessages(messages: string, sources: readonly string[]): string[] {
  return [...messages.matchAll(/^export const (\w+) = \{\n([\s\S]*?)\n\};/gm)].flatMap(([, group, body]) => {
    const names = [
      group!,
      ...sources.flatMap((code) => [...code.matchAll(new RegExp(`\\b${group} as (\\w+)`, 'g'))].map((m) => m[1]!)),
    ];
    return [...body!.matchAll(/^ {2}(\w+)\??:/gm)]
      .map(([, key]) => key!)
      .filter((key) => !sources.some((code) => names.some((name) => new RegExp(`\\b${name}\\.${key}\\b`).test(code))))
      .map((key) => `${group}.${key}`);
  });
}
/** How a module reaches another: an import, a type-only import, a re-export, an `import()`. */
export type ImportKind = 'import' | 'type' | 're-export' | 'dynamic';

/** Every relative module `file` imports, re-exports or loads, from the root, with how. */
export function importsOf(file: string, code: string): { path: string; kind: ImportKind }[] {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest, true);
  const found: { path: string; kind: ImportKind }[] = [];
  const add = (specifier: ts.Node | undefined, kind: ImportKind) => {
    if (specifier && ts.isStringLiteralLike(specifier) && specifier.text.startsWith('.'))
      found.push({ path: posix.join(posix.dirname(file), specifier.text), kind });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) add(node.moduleSpecifier, node.importClause?.isTypeOnly ? 'type' : 'import');
    else if (ts.isExportDeclaration(node)) add(node.moduleSpecifier, 're-export');
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)
      add(node.arguments[0], 'dynamic');
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal, 'type');
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * The static imports of `files` (path → code) that close a cycle: each strongly connected set of
 * two or more modules (or one that imports itself), its modules sorted, as `a -> b -> …`. A
 * cycle makes the order a module's values are ready in depend on which module is loaded first.
 * An `import type` carries no code, and an `import()` runs after both modules are loaded (the
 * lazy Node parts, docs/architecture.md#who-owns-which-state): neither closes a cycle.
 */
export function valueCycles(files: Map<string, string>): string[] {
  const graph = new Map(
    [...files].map(([file, code]) => [
      file,
      importsOf(file, code)
        .filter(({ kind }) => kind === 'import' || kind === 're-export')
        .map(({ path }) => path.replace(/\.js$/, '.ts'))
        .filter((path) => files.has(path)),
    ]),
  );
  // Tarjan's strongly connected components.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    for (const next of graph.get(file)!) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component = stack.splice(stack.indexOf(file));
    if (component.length > 1 || graph.get(file)!.includes(file)) cycles.push(component.sort().join(' -> '));
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return cycles.sort();
}

/**
 * The entries through which one side of src/ may import another's code: the package's entries
 * (package.json's exports, built by rollup.config.mjs) and the programs' own. `src/shared/` is
 * every side's (docs/architecture.md#the-parts).
 */
export const SIDE_ENTRIES = [
  'src/server/index.ts', // blackbox-capture/server
  'src/server/parts.ts', // blackbox-capture/server/parts
  'src/server/store/redis.ts', // blackbox-capture/server/redis
  'src/server/queue/bullmq.ts', // blackbox-capture/server/bullmq
  'src/server/queue/file.ts', // blackbox-capture/server/file-queue
  'src/server/status/index.ts', // blackbox-capture/server/status
  'src/emulator/index.ts', // blackbox-capture/emulator
  'src/doctor/diagnose.ts', // blackbox-capture/diagnose
  'src/doctor/index.ts', // the doctor's checks for the status page
  'src/doctor/cli.ts', // the command's `doctor` (src/cli.ts)
  'src/gateway/cli.ts', // the command's `serve` (src/cli.ts)
];

/** The side of a module of src/ (`server`, `gateway`, …), or undefined for src/'s own root (the command). */
const sideOf = (file: string) => /^src\/([^/]+)\//.exec(file)?.[1];

/** Every import of `file` into another side's code but through an entry, as `file -> path (kind)`. */
export function crossSideImports(file: string, code: string, entries: readonly string[] = SIDE_ENTRIES): string[] {
  const side = sideOf(file);
  return importsOf(file, code)
    .map(({ path, kind }) => ({ path: path.replace(/\.js$/, '.ts'), kind }))
    .filter(({ path }) => side !== undefined && sideOf(path) !== side && sideOf(path) !== 'shared')
    .filter(({ path }) => !entries.includes(path))
    .map(({ path, kind }) => `${file} -> ${path} (${kind})`);
}

/** The Node adapter: node:http, Express and Fastify's side, which code for every runtime must not reach. */
const NODE_ADAPTER = 'src/server/adapter/node/';
/**
 * The only modules outside the Node adapter that may reach it, each in one way:
 * - the server entry re-exports the adapters (`toNodeHandler`, `toFastifyHandler`, …);
 * - the proxy loads the Node upstream with `import()`, on Node only, and the edge build
 *   swaps it for upstream.edge.ts (rollup.config.mjs);
 * (The emulator, a Node program, serves through the adapter as the entry exports it.)
 */
const NODE_ADAPTER_IMPORTERS: Record<string, ImportKind> = {
  'src/server/index.ts': 're-export',
  'src/server/proxy/upstream.ts': 'dynamic',
};

/** Every import of the Node adapter from outside it but the allowed ones, as `file -> path (kind)`. */
export function nodeAdapterImports(file: string, code: string): string[] {
  if (file.startsWith(NODE_ADAPTER)) return [];
  return importsOf(file, code)
    .filter(({ path, kind }) => path.startsWith(NODE_ADAPTER) && NODE_ADAPTER_IMPORTERS[file] !== kind)
    .map(({ path, kind }) => `${file} -> ${path} (${kind})`);
}

/**
 * How many times `code` writes one of the blackbox's rules of its own (comments aside): its
 * longest length, its prefix as a string, its alphabet with the old "@".
 */
const blackboxRuleLiterals = (code: string) =>
  code.replace(/\/\/.*|\/\*[\s\S]*?\*\//g, '').match(/\b8001\b|(['"`])0400|A-Za-z0-9\+\/@/g)?.length ?? 0;

/** How many times `code` writes the default uri hook as a string of its own (comments aside). */
const defaultHookLiterals = (code: string) =>
  code.replace(/\/\/.*|\/\*[\s\S]*?\*\//g, '').match(/(['"`])\/iojs\1/g)?.length ?? 0;

describe('the house rules', () => {
  it('every commit subject since the rule is at most 72 characters', () => {
    const log = spawnSync('git', ['log', '--format=%s', `${RULE_FROM}^..HEAD`], { cwd: ROOT, encoding: 'utf8' });
    expect(log.status, log.stderr).toBe(0);
    const subjects = log.stdout.split('\n').filter(Boolean);
    expect(subjects.length).toBeGreaterThan(0);
    expect(subjects.filter((subject) => subject.length > 72)).toEqual([]);
  });

  it('changesets publish the package publicly from main', () => {
    const config = JSON.parse(readFileSync(new URL('.changeset/config.json', ROOT), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ access: 'public', baseBranch: 'main' });
  });

  it(`no function in src/ is over ${FUNCTION_MAX_LINES} lines`, () => {
    const sources = walk('src').filter((file) => file.endsWith('.ts'));
    expect(sources.length).toBeGreaterThan(50);
    expect(sources.flatMap((file) => longFunctions(file, readFileSync(join(ROOT_PATH, file), 'utf8')))).toEqual([]);
  });

  it('finds a long function of every kind: the rule is not vacuous', () => {
    const body = (lines: number) => '{\n' + '  a();\n'.repeat(lines - 2) + '}';
    const code = [
      `function declared() ${body(4)}`,
      `const expressed = function () ${body(3)};`,
      `const arrow = () => ${body(4)};`,
      `class C { method() ${body(4)} get short() ${body(3)} }`,
      `function short() ${body(3)}`,
    ].join('\n');
    expect(longFunctions('x.ts', code, 3)).toEqual(['x.ts:declared:4', 'x.ts:arrow:4', 'x.ts:method:4']);
    expect(longFunctions('x.ts', `const expressed = function () ${body(4)};`, 3)).toEqual(['x.ts:expressed:4']);
    expect(longFunctions('x.ts', `const o = { property: () => ${body(4)} };`, 3)).toEqual(['x.ts:property:4']);
    expect(longFunctions('x.ts', `run(() => ${body(4)});`, 3)).toEqual(['x.ts:(anonymous):4']);
  });

  describe('message texts (the rule: codelessMessages, above)', () => {
    const sources = walk('src/server')
      .filter((file) => file.endsWith('.ts') && file !== 'src/server/messages.ts')
      .map((file) => [file, readFileSync(join(ROOT_PATH, file), 'utf8')] as const);

    it('on the server, every text is said on an error with a code, never on a plain Error', () => {
      expect(sources.length).toBeGreaterThan(40);
      expect(sources.flatMap(([file, code]) => codelessMessages(file, code))).toEqual([]);
    });

    it('src/server/messages.ts holds no words that no module says', () => {
      const messages = readFileSync(join(ROOT_PATH, 'src/server/messages.ts'), 'utf8');
      expect(
        deadMessages(
          messages,
          sources.map(([, code]) => code),
        ),
      ).toEqual([]);
    });

    it('finds a codeless text and a dead entry: the rules are not vacuous', () => {
      const code = [
        "throw new Error('the store is full');",
        'throw new RangeError(`perSecond must be ${n} or more`);',
        "throw new DeviceRiskError(ERR_X, 'the store is full');",
        "throw new TypeError('bad_host');",
      ].join('\n');
      expect(codelessMessages('x.ts', code)).toEqual(['x.ts:1', 'x.ts:2']);
      const messages = "export const aMessages = {\n  said: 'x',\n  aliased: 'y',\n  dead: 'z',\n};";
      const users = ['aMessages.said;', "import { aMessages as say } from './messages.js'; say.aliased;"];
      expect(deadMessages(messages, users)).toEqual(['aMessages.dead']);
    });
  });

  it('nothing outside src/server/adapter/node imports it but the entry and the proxy upstream', () => {
    const sources = walk('src').filter((file) => /\.tsx?$/.test(file));
    expect(sources.filter((file) => file.startsWith(NODE_ADAPTER)).length).toBeGreaterThan(5);
    expect(sources.flatMap((file) => nodeAdapterImports(file, readFileSync(join(ROOT_PATH, file), 'utf8')))).toEqual(
      [],
    );
  });

  it('finds an import of the Node adapter of every kind, and the allowed ones only as allowed: not vacuous', () => {
    /** One import of each kind, from a module in `src/server/<folder>` (`server` is the path to src/server). */
    const code = (server: string) =>
      [
        `import { takeNodeBody } from '${server}/adapter/node/body.js';`,
        `import type { NodeBody } from '${server}/adapter/node/body.js';`,
        `export { toNodeHandler } from '${server}/adapter/node/handler.js';`,
        `const upstream = import('${server}/adapter/node/upstream.js');`,
        `type Upstream = typeof import('${server}/adapter/node/upstream.js');`,
        `import { json } from '${server}/http.js';`,
        `import { x } from '${server}/adapter/nodeish.js';`,
      ].join('\n');
    expect(nodeAdapterImports('src/server/proxy/proxy.ts', code('..'))).toEqual([
      'src/server/proxy/proxy.ts -> src/server/adapter/node/body.js (import)',
      'src/server/proxy/proxy.ts -> src/server/adapter/node/body.js (type)',
      'src/server/proxy/proxy.ts -> src/server/adapter/node/handler.js (re-export)',
      'src/server/proxy/proxy.ts -> src/server/adapter/node/upstream.js (dynamic)',
      'src/server/proxy/proxy.ts -> src/server/adapter/node/upstream.js (type)',
    ]);
    const kinds = (file: string, server: string) =>
      nodeAdapterImports(file, code(server)).map((found) => /\((.+)\)$/.exec(found)?.[1]);
    expect(kinds('src/server/proxy/upstream.ts', '..')).toEqual(['import', 'type', 're-export', 'type']);
    expect(kinds('src/server/index.ts', '.')).toEqual(['import', 'type', 'dynamic', 'type']);
    expect(kinds('src/emulator/index.ts', '../server')).toEqual(['import', 'type', 're-export', 'dynamic', 'type']);
    expect(kinds('src/server/adapter/node/fastify.ts', '../..')).toEqual([]);
  });

  it('the default uri hook is written once, in src/shared/constants.ts, for the kit and the doctor', () => {
    const written = walk('src')
      .filter((file) => /^src\/(server|doctor)\/.*\.ts$/.test(file))
      .filter((file) => defaultHookLiterals(readFileSync(join(ROOT_PATH, file), 'utf8')) > 0);
    expect(written).toEqual([]);
    expect(
      defaultHookLiterals("const a = '/iojs'; // default '/iojs'\nconst b = `${c}/iojs`; const d = '/iojs/x';"),
    ).toBe(1);
  });

  it("the blackbox's rules are written once, in src/shared/constants.ts, for the kit and the emulator", () => {
    const sources = walk('src').filter((file) => /\.tsx?$/.test(file) && file !== 'src/shared/constants.ts');
    const written = sources.filter((file) => blackboxRuleLiterals(readFileSync(join(ROOT_PATH, file), 'utf8')) > 0);
    expect(written).toEqual([]);
    expect(blackboxRuleLiterals(readFileSync(join(ROOT_PATH, 'src/shared/constants.ts'), 'utf8'))).toBe(3);
    expect(
      blackboxRuleLiterals(
        "const a = 8001; // max 8001\nconst p = /^[A-Za-z0-9+/@]+=*$/; const b = '0400' + x; const c = 80012; const d = `0400${e}`;",
      ),
    ).toBe(4);
  });

  it(`the README is at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(new URL('README.md', ROOT), 'utf8').trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(README_MAX_LINES);
  });
});

describe('rooms you can hold in your head', () => {
  const sources = new Map(
    walk('src')
      .filter((file) => /\.tsx?$/.test(file))
      .map((file) => [file, readFileSync(join(ROOT_PATH, file), 'utf8')]),
  );

  it('no static value import in src/ closes a cycle', () => {
    expect(sources.size).toBeGreaterThan(100);
    expect(valueCycles(sources)).toEqual([]);
  });

  it("no side of src/ imports another side's code but through an entry (SIDE_ENTRIES)", () => {
    const crossing = [...sources].flatMap(([file, code]) => crossSideImports(file, code));
    expect(crossing).toEqual([]);
  });

  it('finds an import into another side by every way, and lets entries and src/shared/ through: not vacuous', () => {
    const code = [
      "import { keyPart } from '../server/store/store.js';",
      "import type { Store } from '../server/store/store.js';",
      "export { x } from '../emulator/service.js';",
      "const d = import('../doctor/doctor.js');",
      "import { createDeviceRiskHandler } from '../server/index.js';",
      "import { keyPart as k } from '../server/parts.js';",
      "import { BLACKBOX_PATTERN } from '../shared/constants.js';",
      "import { routes } from './routes.js';",
    ].join('\n');
    expect(crossSideImports('src/gateway/outbox.ts', code)).toEqual([
      'src/gateway/outbox.ts -> src/server/store/store.ts (import)',
      'src/gateway/outbox.ts -> src/server/store/store.ts (type)',
      'src/gateway/outbox.ts -> src/emulator/service.ts (re-export)',
      'src/gateway/outbox.ts -> src/doctor/doctor.ts (dynamic)',
    ]);
  });

  it(`src/server's root holds at most ${SERVER_ROOT_MAX_FILES} files; the figures`, () => {
    const rootFiles = readdirSync(join(ROOT_PATH, 'src/server'), { withFileTypes: true }).filter((e) => e.isFile());
    const gatewayEntries = new Set(
      [...sources]
        .filter(([file]) => file.startsWith('src/gateway/'))
        .flatMap(([file, code]) => importsOf(file, code).map(({ path }) => path.replace(/\.js$/, '.ts')))
        .filter((path) => path.startsWith('src/server/')),
    );
    // The structure's figures (issue #67), printed with every run of the house rules.
    console.log(
      [
        `src/server root files: ${rootFiles.length} (${rootFiles.map((e) => e.name).join(', ')})`,
        `value-import cycles in src/: ${valueCycles(sources).length}`,
        `kit entries the gateway uses: ${gatewayEntries.size} (${[...gatewayEntries].sort().join(', ')})`,
      ].join('\n'),
    );
    expect(rootFiles.length).toBeLessThanOrEqual(SERVER_ROOT_MAX_FILES);
    expect([...gatewayEntries].filter((path) => !SIDE_ENTRIES.includes(path))).toEqual([]);
  });

  it("the endpoint's handler reads no option, only the settings endpoint/settings.ts resolved once", () => {
    const code = sources.get('src/server/endpoint/handler.ts')!.replace(/\/\/.*|\/\*[\s\S]*?\*\//g, '');
    // The one read: the options handed to endpointSettings.
    expect(code.match(/\boptions\b(?!\??:)/g)).toEqual(['options']);
    expect(code).toMatch(/= endpointSettings\(options\);/);
  });

  it('finds a cycle of every length, and only of value imports: the rule is not vacuous', () => {
    const files = new Map([
      ['src/a.ts', "import { b } from './b.js';"],
      ['src/b.ts', "export { c } from './c.js';"],
      ['src/c.ts', "import { a } from './a.js';"],
      ['src/d.ts', "import { d } from './d.js';"],
      ['src/e.ts', "import type { F } from './f.js';"],
      ['src/f.ts', "import { e } from './e.js'; const g = () => import('./g.js');"],
      ['src/g.ts', "import { f } from './f.js';"],
    ]);
    expect(valueCycles(files)).toEqual(['src/a.ts -> src/b.ts -> src/c.ts', 'src/d.ts']);
  });
});

describe('no stale paths', () => {
  const files = walk('.');
  const documents = ['README.md', 'CONTRIBUTING.md', ...files.filter((file) => /^docs\/[^/]+\.md$/.test(file))];
  const code = files.filter(
    // This file's own examples of stale paths are its fixtures.
    (file) =>
      /^(src|test|e2e|engines|scripts|bench|runtimes|demo)\/.*\.(ts|mts|mjs)$/.test(file) &&
      file !== 'test/house.test.ts',
  );
  const exists = (path: string) => existsSync(join(ROOT_PATH, path));

  it('every path from the root that the documents and the comments name exists', () => {
    const texts = new Map([
      // A snippet's paths are the user's app's (`src/Checkout.vue`), not the repository's.
      ...documents.map((file) => [file, proseOf(readFileSync(join(ROOT_PATH, file), 'utf8'))] as const),
      ...code.map((file) => [file, commentsOf(readFileSync(join(ROOT_PATH, file), 'utf8'))] as const),
    ]);
    expect(texts.size).toBeGreaterThan(100);
    expect(missingPaths(texts, exists)).toEqual([]);
  });

  it("every file name alone in a comment of src/ or scripts/ is a file of the repository's", () => {
    const names = new Set(files.map((file) => basename(file)));
    const stale = code
      .filter((file) => /^(src|scripts)\//.test(file))
      .flatMap((file) =>
        [...commentsOf(readFileSync(join(ROOT_PATH, file), 'utf8')).matchAll(FILE_NAMES)]
          .filter(([name]) => !names.has(name))
          .map(([name]) => `${file}: ${name}`),
      );
    expect(stale).toEqual([]);
  });

  it('finds a stale path: the rule is not vacuous', () => {
    const text = 'see src/server/net/http.ts and src/server/gone.ts, not https://x.test/src/no.ts or @scope/src/x.ts';
    expect(missingPaths(new Map([['doc', text]]), exists)).toEqual(['doc: src/server/gone.ts']);
    expect(missingPaths(new Map([['doc', 'ls test/browser/capture* and test/gone/x*']]), exists)).toEqual([
      'doc: test/gone',
    ]);
    expect(commentsOf('const a = 1; // src/x.ts\n/* docs/y.md */ "src/z.ts"')).toBe('// src/x.ts\n/* docs/y.md */');
  });
});

/**
 * A module that reads the built files: imports from dist/, copies it, or imports the package by
 * its own name (which resolves to dist/ through package.json's exports).
 */
const READS_DIST = /['"`](?:\.\.?\/)*dist\/|join\(ROOT, ['"]dist['"]|from ['"]blackbox-capture(?:\/[\w-]+)?['"]/;
/**
 * The test files of `files` (path → text) that read dist/ themselves, or through a support
 * module or a shipped recipe (proxy/) they name.
 */
export function testsOfBuiltFiles(files: Map<string, string>): string[] {
  const readers = [...files]
    .filter(([file, text]) => /^(?:test\/support|proxy)\//.test(file) && READS_DIST.test(text))
    .map(([file]) =>
      file.startsWith('proxy/') ? file.slice('proxy/'.length) : basename(file).replace(/\.(?:ts|mjs)$/, ''),
    );
  const names = (text: string, reader: string) =>
    reader.includes('/') ? text.includes(`'${reader}'`) : text.includes(`${reader}.`) || text.includes(`/${reader}'`);
  return [...files]
    .filter(([file]) => file.endsWith('.test.ts'))
    .filter(([, text]) => READS_DIST.test(text) || readers.some((reader) => names(text, reader)))
    .map(([file]) => file)
    .sort();
}

describe('the mutation sandbox', () => {
  it('leaves out only what git does not track, so `npm run mutation` runs on a clean clone', async () => {
    const { default: config } = (await import(new URL('stryker.config.mjs', ROOT).href)) as {
      default: { ignorePatterns: string[] };
    };
    expect(config.ignorePatterns.length).toBeGreaterThan(3);
    const tracked = config.ignorePatterns.filter(
      (pattern) => spawnSync('git', ['ls-files', '--', pattern], { cwd: ROOT_PATH, encoding: 'utf8' }).stdout !== '',
    );
    expect(tracked).toEqual([]);
  });

  it('leaves out every test of the built files, and only those: listed in builtFileTests', async () => {
    const { builtFileTests } = await import('../vitest.config.js');
    const files = new Map(
      [...walk('test'), ...walk('proxy')]
        // This file's own examples name dist/ without reading it.
        .filter((file) => /\.(?:ts|mjs)$/.test(file) && !/^test\/(?:package|docs)\/|^test\/house\./.test(file))
        .map((file) => [file, readFileSync(join(ROOT_PATH, file), 'utf8')]),
    );
    expect(testsOfBuiltFiles(files)).toEqual([...builtFileTests].sort());
  });

  it('finds a test of the built files, directly or through a support module: the rule is not vacuous', () => {
    const files = new Map([
      ['test/support/child.mjs', "import { x } from '../../dist/server.js';"],
      ['test/a/spawns.test.ts', "spawn(process.execPath, [support('child.mjs')]);"],
      ['test/a/copies.test.ts', "cpSync(join(ROOT, 'dist'), target);"],
      ['test/a/sources.test.ts', "import { x } from '../../src/server/index.js';"],
      ['proxy/edge/handler.ts', "import { createFirstPartyProxy } from 'blackbox-capture/server';"],
      ['test/a/recipe.test.ts', "await import(recipe('edge/handler.ts'));"],
    ]);
    expect(testsOfBuiltFiles(files)).toEqual([
      'test/a/copies.test.ts',
      'test/a/recipe.test.ts',
      'test/a/spawns.test.ts',
    ]);
  });
});

/**
 * The server kit's factories that take an options object, and have no settings module (an
 * OptionTable of their options in a settings.ts beside them): each with the reason.
 */
const NO_SETTINGS_MODULE: Record<string, string> = {
  createQueuedChecks: 'internal: made by the endpoint from its settings (endpoint/settings.ts)',
  createDefaultQueue: 'internal: made by the endpoint from its settings (endpoint/settings.ts: dataDir)',
  createIdempotency: 'internal: made by the endpoint from its settings (endpoint/settings.ts)',
  createRateLimiter: 'internal: made by the client from its settings (api/settings.ts)',
  createCaptureNonce: 'a call, not a part that lives: its options are checked on each call (endpoint/nonce.ts)',
};

/** Every `export function createX(…options: SomeOptions…)` of `code`, as [name, options type]. */
export const factoriesWithOptions = (code: string): [string, string][] =>
  [...code.matchAll(/export (?:async )?function (create\w+)\([^)]*?\boptions\??: (\w+Options)\b/g)].map((m) => [
    m[1]!,
    m[2]!,
  ]);

/** The factories of `files` (path → code) whose options no settings.ts beside them tables, and not exempt. */
export function withoutSettings(files: Map<string, string>, exempt: Record<string, string>): string[] {
  return [...files].flatMap(([file, code]) =>
    factoriesWithOptions(code)
      .filter(([name, type]) => {
        const settings = files.get(posix.join(posix.dirname(file), 'settings.ts')) ?? '';
        return !exempt[name] && !new RegExp(`OptionTable<${type}>`).test(settings);
      })
      .map(([name]) => `${file}: ${name}`),
  );
}

/** The string literals of `code` that are one of `codes`. */
const literalsOf = (code: string, codes: ReadonlySet<string>): string[] =>
  [...code.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!).filter((literal) => codes.has(literal));

describe('one source for every list', () => {
  const serverFiles = new Map(
    walk('src/server')
      .filter((file) => file.endsWith('.ts'))
      .map((file) => [file, readFileSync(join(ROOT_PATH, file), 'utf8')]),
  );

  it('every factory of the server kit that takes options has a settings module, or a reason', () => {
    expect(withoutSettings(serverFiles, NO_SETTINGS_MODULE)).toEqual([]);
    // Each exemption names a factory that is there: a stale one is dropped.
    const factories = [...serverFiles.values()].flatMap((code) => factoriesWithOptions(code).map(([name]) => name));
    expect(Object.keys(NO_SETTINGS_MODULE).filter((name) => !factories.includes(name))).toEqual([]);
  });

  it('finds a factory without its settings module: the rule is not vacuous', () => {
    const files = new Map([
      ['src/server/a/a.ts', 'export function createA(options: AOptions) {}'],
      ['src/server/b/b.ts', 'export function createB(client: C, options: BOptions = {}) {}'],
      ['src/server/b/settings.ts', 'export const B = {} as const satisfies OptionTable<BOptions>;'],
      ['src/server/c/c.ts', 'export async function createC(options: COptions) {}'],
    ]);
    expect(withoutSettings(files, { createC: 'internal' })).toEqual(['src/server/a/a.ts: createA']);
  });

  it('the error codes are written once, in ERROR_CODES (src/server/errors.ts), and every ERR_ name reads it', async () => {
    const errors = serverFiles.get('src/server/errors.ts')!;
    const { ERROR_CODES } = await import('../src/server/errors.js');
    const codes = new Set<string>(Object.values(ERROR_CODES));
    expect(codes.size).toBeGreaterThan(30);
    // An ERR_ name holding its own string would be a second list (and fail to compile as a code).
    expect(errors.match(/export const ERR_\w+ = '/g)).toBeNull();
    expect(errors.match(/export const ERR_\w+ = ERROR_CODES\.\w+;/g)?.length).toBe(codes.size);
    // Elsewhere a code is named, never spelt; `aborted` is also a capture outcome (src/shared/types.ts).
    const spelt = [...serverFiles]
      .filter(([file]) => file !== 'src/server/errors.ts')
      .flatMap(([file, code]) =>
        literalsOf(code, codes)
          .filter((l) => l !== 'aborted')
          .map((l) => `${file}: ${l}`),
      );
    expect(spelt).toEqual([]);
    expect(literalsOf("throw new DeviceRiskError('queue_full', m); const k = 'queued';", codes)).toEqual([
      'queue_full',
    ]);
  });

  it('the outcome kinds are the union in src/shared/types.ts, and the server keys its list by it', () => {
    const outcome = serverFiles.get('src/server/endpoint/outcome.ts')!;
    expect(outcome).toMatch(/Record<CaptureOutcomeKind, \{/);
    expect(outcome).not.toMatch(/: readonly CaptureOutcomeKind\[\] = \[/);
  });

  it('a queued customer is CustomerMapping with its transaction sealed, not a copy', () => {
    expect(serverFiles.get('src/server/queue/queue.ts')).toMatch(
      /export type QueuedCustomer = Omit<CustomerMapping, 'transaction'>/,
    );
  });

  it('the regions are named in src/server/api/regions.ts only: the kit and the demo read them there', () => {
    const spelt = new Set(['src/server/api/regions.ts']);
    const files = [...walk('src'), ...walk('demo')].filter((file) => /\.tsx?$/.test(file) && !spelt.has(file));
    const named = files.filter((file) => /'(?:US|EU|SG)'|\bUS, EU\b/.test(readFileSync(join(ROOT_PATH, file), 'utf8')));
    expect(named).toEqual([]);
  });
});
