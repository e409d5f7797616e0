// The built files in Node (server-side rendering): importing touches no browser global,
// and a call outside a browser rejects with not_browser instead of throwing.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PLAIN_ENDPOINT_OPTIONS } from '../../src/server/endpoint/settings.js';

const ESM = new URL('../../dist/index.js', import.meta.url);
const UMD = new URL('../../dist/blackbox-capture.umd.js', import.meta.url);
const BROWSER_GLOBALS = ['window', 'document', 'navigator', 'location', 'self', 'trustedTypes'];

/** Runs `load` while every browser global is a getter that records its use. */
async function watchingGlobals<T>(load: () => Promise<T>): Promise<{ result: T; touched: string[] }> {
  const touched: string[] = [];
  const g = globalThis as Record<string, unknown>;
  const saved = BROWSER_GLOBALS.map((name) => [name, Object.getOwnPropertyDescriptor(g, name)] as const);
  for (const name of BROWSER_GLOBALS) {
    Object.defineProperty(g, name, { configurable: true, get: () => void touched.push(name) });
  }
  try {
    return { result: await load(), touched };
  } finally {
    for (const [name, descriptor] of saved) {
      if (descriptor) Object.defineProperty(g, name, descriptor);
      else delete g[name];
    }
  }
}

describe('built files in Node', () => {
  it('dist exists (run npm run build first)', () => {
    expect(existsSync(ESM)).toBe(true);
    expect(existsSync(UMD)).toBe(true);
  });

  it('importing the ESM build touches no window, document or other browser global', async () => {
    const { result, touched } = await watchingGlobals(() => import(ESM.href + '?ssr'));
    expect(touched).toEqual([]);
    expect(typeof result.captureBlackbox).toBe('function');
  });

  it('captureBlackbox rejects with not_browser outside a browser', async () => {
    const { captureBlackbox, isBlackboxCaptureError } = await import(ESM.href);
    const error = await captureBlackbox({ loaderUrl: 'https://vendor.example/loader.js' }).catch((e: unknown) => e);
    expect(isBlackboxCaptureError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'not_browser' });
  });

  it('still validates options first outside a browser', async () => {
    const { captureBlackbox } = await import(ESM.href);
    await expect(captureBlackbox({ loaderUrl: 'ftp://x' })).rejects.toMatchObject({ code: 'invalid_option' });
  });

  it('the UMD build runs as a plain script without a DOM, starts nothing and exposes the API', async () => {
    // As a script tag runs it: classic script, global this, no module system.
    const context: Record<string, any> = {};
    context.globalThis = context;
    vm.runInNewContext(readFileSync(UMD, 'utf8'), context);
    expect(typeof context.BlackboxCapture.captureBlackbox).toBe('function');
    expect(typeof context.BlackboxCapture.BlackboxCaptureError).toBe('function');
    expect(typeof context.BlackboxCapture.isBlackboxCaptureError).toBe('function');
    expect(context.BlackboxCapture.ready).toBeUndefined();
  });

  it('the error class and type guard work across copies (name check)', async () => {
    const { BlackboxCaptureError, isBlackboxCaptureError } = await import(ESM.href);
    const foreign = Object.assign(new Error('x'), { name: 'BlackboxCaptureError', code: 'timeout' });
    expect(isBlackboxCaptureError(foreign)).toBe(true);
    expect(isBlackboxCaptureError(new Error('x'))).toBe(false);
    expect(isBlackboxCaptureError({ name: 'BlackboxCaptureError', code: 'timeout' })).toBe(false);
    const own = new BlackboxCaptureError('timeout', 'm', { cause: 1, blackbox: '0400' });
    expect(own).toMatchObject({ code: 'timeout', cause: 1, blackbox: '0400', name: 'BlackboxCaptureError' });
    expect(own).toBeInstanceOf(Error);
  });
});

describe('the browser files', () => {
  // V8 then compiles every function with the script, off the main thread, instead of each
  // on its first call, inside captureBlackbox() on the page's main thread.
  it.each(['index.js', 'browser-deliver.js', 'browser-messages.js', 'blackbox-capture.umd.js'])(
    '%s opens with the compile hint',
    (file) => {
      expect(readFileSync(new URL(`../../dist/${file}`, import.meta.url), 'utf8').split('\n')[0]).toBe(
        '//# allFunctionsCalledOnLoad',
      );
    },
  );
});

describe('the exports map', () => {
  it('resolves every public entry point the way Node resolves a dependency', async () => {
    const { execFileSync } = await import('node:child_process');
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const b = await import('blackbox-capture'); const s = await import('blackbox-capture/server'); const e = await import('blackbox-capture/emulator');
         console.log([typeof b.captureBlackbox, typeof s.createDeviceRiskHandler, typeof e.startEmulator].join(' '));`,
      ],
      { cwd: new URL('../..', import.meta.url), encoding: 'utf8' },
    );
    expect(out.trim()).toBe('function function function');
  });
});

// The public API of every entry, and nothing else: an internal that leaks into an entry
// (a bundler's shared-chunk export) becomes API that users start to import.
describe('export lists', () => {
  it.each([
    [
      'blackbox-capture (dist/index.js)',
      '../../dist/index.js',
      ['BlackboxCaptureError', 'captureBlackbox', 'isBlackboxCaptureError'],
    ],
    [
      'blackbox-capture/server (dist/server.js)',
      '../../dist/server.js',
      [
        'API_BASE_URLS',
        'BLACKBOX_PATTERN',
        'BODY_TIMEOUT_MS',
        'BodyTimeoutError',
        'CALLBACK_SOURCES',
        'COLLECTOR_URLS',
        'DeviceRiskError',
        'DeviceRiskTransaction',
        'ERROR_CODES',
        'STORE_TIMEOUT_MS',
        'repairBlackbox',
        'createCaptureNonce',
        'verifyCaptureNonce',
        'FINAL_STATUSES',
        'MAX_BLACKBOX_LENGTH',
        'REGIONS',
        'RESULT_SCHEDULE_SECONDS',
        'RETRIEVAL_BASE_URLS',
        'TOKEN_LIFETIME_BOUNDS',
        'TOKEN_URLS',
        'TRANSACTION_BASE_URLS',
        'regionOrigin',
        'checkAccountRequest',
        'checkBlackbox',
        'collectorPath',
        'createCallbackHandler',
        'createDeviceRiskClient',
        'createDeviceRiskHandler',
        'createFirstPartyProxy',
        'createMemoryQueue',
        'NotCheckedError',
        'ResultUndeliveredError',
        'createMemoryStore',
        'createTokenSource',
        'isDeviceRiskError',
        'parseDetails',
        'runDeviceRiskCheck',
        'toFastifyHandler',
        'toNodeHandler',
      ],
    ],
    ['blackbox-capture/server/redis (dist/server-redis.js)', '../../dist/server-redis.js', ['createRedisStore']],
    [
      'blackbox-capture/server/file-queue (dist/server-file-queue.js)',
      '../../dist/server-file-queue.js',
      ['createFileQueue'],
    ],
    [
      'blackbox-capture/server/bullmq (dist/server-bullmq.js)',
      '../../dist/server-bullmq.js',
      ['createBullmqQueue', 'DEFAULT_BULLMQ_MAX_QUEUED', 'jobIdOf'],
    ],
    [
      'blackbox-capture/server/status (dist/server-status.js)',
      '../../dist/server-status.js',
      ['createMetricsHandler', 'createStatusHandler', 'createStatusMonitor', 'METRICS', 'prometheusName'],
    ],
    [
      'blackbox-capture/server/parts (dist/server-parts.js)',
      '../../dist/server-parts.js',
      [
        'count',
        'createSqliteStore',
        'DATA_FILE',
        'doublingMs',
        'gaugeFamily',
        'importLegacyQueue',
        'importLegacyStore',
        'isHeldAnswer',
        'isMaybeHeldAnswer',
        'isRegion',
        'isRelayed',
        'isStoreAway',
        'keyPart',
        'landingOf',
        'ownerMark',
        'pendingList',
        'readLimited',
        'referenceRuleBroken',
        'REGIONS_IN_WORDS',
        'settleWithin',
        'sourceMatcher',
        'unrefd',
        'withTimeLimit',
      ],
    ],
    [
      'blackbox-capture/emulator (dist/emulator.js)',
      '../../dist/emulator.js',
      [
        'CONFORMANCE_CASES',
        'EMULATED_LOADER_VERSION',
        'conformancePage',
        'createManualClock',
        'decodeBlackbox',
        'runConformance',
        'startConformanceSite',
        'startEmulator',
      ],
    ],
  ])('%s exports exactly its public API', async (_, file, names) => {
    const module = (await import(new URL(file, import.meta.url).href)) as Record<string, unknown>;
    expect(Object.keys(module).sort()).toEqual([...names].sort());
  });

  it('the Workers and edge build (dist/server.edge.js) exports what dist/server.js does', async () => {
    const node = (await import(new URL('../../dist/server.js', import.meta.url).href)) as Record<string, unknown>;
    const edge = (await import(new URL('../../dist/server.edge.js', import.meta.url).href)) as Record<string, unknown>;
    expect(Object.keys(edge).sort()).toEqual(Object.keys(node).sort());
  });

  it("dist/server.js and what it imports statically hold no node: module: the default queue's file comes by a dynamic import", () => {
    const seen = new Set<string>();
    const nodeImports: string[] = [];
    const walk = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(new URL(`../../dist/${file}`, import.meta.url), 'utf8');
      for (const [, source] of code.matchAll(/(?:^|\n)\s*(?:import|export)\s*(?:[^'"]*?\sfrom\s*)?['"]([^'"]+)['"]/g)) {
        if (source!.startsWith('./')) walk(source!.slice(2));
        else if (source!.startsWith('node:')) nodeImports.push(`${file}: ${source}`);
      }
    };
    walk('server.js');
    expect(nodeImports).toEqual([]);
    // The walk follows chunks: the default queue's own chunk, loaded on first use, is not among them.
    expect([...seen].some((file) => file.startsWith('chunk-handler-'))).toBe(true);
    expect(readFileSync(new URL('../../dist/server.js', import.meta.url), 'utf8')).not.toMatch(/data-dir/);
    expect([...seen].filter((file) => file.startsWith('chunk-data-dir-'))).toEqual([]);
  });

  it('the UMD global carries the API plus ready, and nothing else', () => {
    const sandbox: Record<string, unknown> = {};
    vm.runInNewContext(readFileSync(UMD, 'utf8'), sandbox);
    expect(Object.keys(sandbox.BlackboxCapture as object).sort()).toEqual([
      'BlackboxCaptureError',
      'captureBlackbox',
      'isBlackboxCaptureError',
      'ready',
    ]);
  });
});

describe('the declarations', () => {
  it('every option of DeviceRiskHandlerOptions in dist/server.d.ts keeps its comment, the plain ones made from their rows', () => {
    // The plain options are declared by their settings rows (src/server/endpoint/settings.ts):
    // what an editor shows of them comes through the mapped type, and must not be lost.
    const file = fileURLToPath(new URL('../../dist/server.d.ts', import.meta.url));
    const program = ts.createProgram([file], { strict: true, noEmit: true, skipLibCheck: true });
    const checker = program.getTypeChecker();
    const options = program
      .getSourceFile(file)!
      .statements.find(
        (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'DeviceRiskHandlerOptions',
      )!;
    const members = checker.getPropertiesOfType(checker.getTypeAtLocation(options));
    const comments = new Map(members.map((m) => [m.name, ts.displayPartsToString(m.getDocumentationComment(checker))]));
    expect(Object.keys(PLAIN_ENDPOINT_OPTIONS).filter((name) => !comments.get(name))).toEqual([]);
    expect(comments.get('maxBodyBytes')).toBe('Largest request body in bytes. Default 16384.');
    expect(checker.typeToString(checker.getTypeOfSymbol(members.find((m) => m.name === 'reportStatus')!))).toBe(
      'boolean | undefined',
    );
  });
});
