// @vitest-environment happy-dom
// Behaviour of captureBlackbox() against the emulated vendor loader in a test DOM.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import {
  blockThirdParty,
  breakLoader,
  breakProxy,
  clearOverrides,
  failure,
  freshPage,
  LOADER_URL,
  loaders,
  loaderScript,
  notFound,
  ok,
  override,
  pageLoaderTag,
  requests,
  scriptsFor,
  serveLoader,
  settings,
  w,
} from '../support/vendor-dom.js';

let api: Awaited<ReturnType<typeof freshPage>>;
beforeEach(async () => {
  api = await freshPage();
});

describe('the final blackbox', () => {
  it('resolves with the value of the complete call, from both collection paths', async () => {
    const updates: Array<[string, boolean]> = [];
    const bb = await api.captureBlackbox({ ...ok, onUpdate: (b, c) => updates.push([b, c]) });
    expect(bb).toMatch(/^0400[A-Za-z0-9+/]+=*$/);
    expect(bb.length).toBeGreaterThanOrEqual(1000);
    expect(bb.length).toBeLessThanOrEqual(1500);
    expect(decodeBlackbox(bb)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
    expect(updates.length).toBeGreaterThan(2);
    expect(updates.at(-1)).toEqual([bb, true]);
    expect(updates.filter(([, complete]) => complete)).toHaveLength(1);
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });

  it('writes the config object the loader reads, with defaults', async () => {
    await api.captureBlackbox({ ...ok, subkey: 'SUB KEY', vendor: { enable_flash: false, tp_split: true } });
    const config = w().IGLOO;
    expect(config.loader).toMatchObject({
      version: 'general5',
      uri_hook: '/iojs',
      subkey: 'SUB KEY',
      tp_split: true,
      loaderVer: '5.2.2',
    });
    expect(config.enable_flash).toBe(false);
    expect(config.enable_rip).toBe(true);
    expect(typeof config.bb_callback).toBe('function');
    expect(typeof config.loader.trace_handler).toBe('function');
    expect(w().io_global_object_name).toBeUndefined();
    // The loader built its URLs from that config (subkey encoded, // collapsed, query string).
    expect(requests).toContain(
      'https://shop.test/iojs/general5/SUB%20KEY/static_wdp.js?loaderVer=5.2.2&compat=false&tp=true&tp_split=true&fp_static=true&fp_dyn=true&flash=false',
    );
    expect(requests.some((u) => u.startsWith('https://tp.test/general5/SUB%20KEY/dyn_wdp.js?'))).toBe(true);
  });

  it('uses a custom global name and sets io_global_object_name to it', async () => {
    const bb = await api.captureBlackbox({ ...ok, globalName: 'CUSTOM_CFG' });
    expect(w().io_global_object_name).toBe('CUSTOM_CFG');
    expect(w().CUSTOM_CFG.loader.loaderVer).toBe('5.2.2');
    expect(w().IGLOO).toBeUndefined();
    expect(decodeBlackbox(bb)?.sources).toHaveLength(3);
  });

  it('passes trace messages to onTrace', async () => {
    const traces: string[] = [];
    await api.captureBlackbox({ ...ok, onTrace: (m) => traces.push(m) });
    // Loader 5.2.2 traces the version it puts in each path; the emulator's scripts trace completion.
    expect(traces).toContain('********** version before replace: general5/ **********');
    expect(traces).toContain('emulator: collection complete');
  });

  it('keeps reporting even when onUpdate throws, and reports the exception', async () => {
    const reported: unknown[] = [];
    w().reportError = (e: unknown) => reported.push(e);
    try {
      let calls = 0;
      const bb = await api.captureBlackbox({
        ...ok,
        onUpdate: () => {
          calls++;
          throw new Error('integrator bug');
        },
      });
      expect(bb).toMatch(/^0400/);
      expect(calls).toBeGreaterThan(2);
      expect(reported).toHaveLength(calls);
      expect(reported[0]).toMatchObject({ message: 'integrator bug' });
    } finally {
      delete w().reportError;
    }
  });
});

describe('the page field', () => {
  it('fills the field with every update and fires input and change', async () => {
    document.body.innerHTML = '<form><input type="hidden" id="bb"></form>';
    const input = document.getElementById('bb') as HTMLInputElement;
    const seen: string[] = [];
    input.addEventListener('input', () => seen.push(input.value));
    let changes = 0;
    input.addEventListener('change', () => changes++);
    const bb = await api.captureBlackbox({ ...ok, field: 'bb' });
    expect(input.value).toBe(bb);
    expect(seen.length).toBeGreaterThan(2);
    expect(seen.at(-1)).toBe(bb);
    expect(changes).toBe(seen.length);
  });

  it('goes through the native setter, so a framework value tracker sees the change', async () => {
    const textarea = document.createElement('textarea');
    document.body.append(textarea);
    // React installs an own `value` property that records what it set; a plain
    // assignment would hit it and React would think nothing changed.
    let tracked = '';
    const native = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(textarea), 'value')!;
    Object.defineProperty(textarea, 'value', {
      configurable: true,
      get() {
        return native.get!.call(this);
      },
      set(v: string) {
        tracked = v;
        native.set!.call(this, v);
      },
    });
    const bb = await api.captureBlackbox({ ...ok, field: textarea });
    expect(textarea.value).toBe(bb);
    expect(tracked).toBe(''); // the tracker was bypassed, so React's onChange fires
  });

  it('keeps the partial blackbox in the field when the capture times out', async () => {
    document.body.innerHTML = '<input id="bb">';
    settings.delays = { fp_static: [5], fp_dyn: [5000], tp: [5000] };
    const error = await failure(api.captureBlackbox({ ...ok, field: 'bb', timeoutMs: 150 }));
    expect(error.code).toBe('timeout');
    expect(error.blackbox).toMatch(/^0400/);
    expect(decodeBlackbox(error.blackbox)?.sources).toEqual(['fp_static']);
    expect((document.getElementById('bb') as HTMLInputElement).value).toBe(error.blackbox);
    expect(error.message).toMatch(/150 ms.*partial/);
  });
});

describe('a config object already on the page', () => {
  it('is kept and merged: its keys, its own bb_callback, its trace_handler, its bbout_element_id', async () => {
    document.body.innerHTML = '<input id="page-field">';
    const pageUpdates: Array<[string, boolean]> = [];
    const pageTraces: string[] = [];
    w().IGLOO = {
      enable_flash: false,
      bbout_element_id: 'page-field',
      bb_callback: (bb: string, complete: boolean) => pageUpdates.push([bb, complete]),
      loader: {
        subkey: 'PAGE',
        version: 'early5',
        trace_handler: (m: string) => pageTraces.push(m),
        tp_host: 'https://tp.test',
      },
    };
    const bb = await api.captureBlackbox({ ...ok, version: '5.2.2' });
    const config = w().IGLOO;
    expect(config.enable_flash).toBe(false);
    expect(config.loader).toMatchObject({ subkey: 'PAGE', version: '5.2.2', uri_hook: '/iojs' });
    expect(pageUpdates.at(-1)).toEqual([bb, true]);
    expect(pageTraces).toContain('emulator: collection complete');
    expect((document.getElementById('page-field') as HTMLInputElement).value).toBe(bb);
  });

  it("uses the page's io_global_object_name when no globalName is given", async () => {
    w().io_global_object_name = 'CUSTOM_PAGE';
    w().CUSTOM_PAGE = { loader: { subkey: 'S' } };
    await api.captureBlackbox(ok);
    expect(w().CUSTOM_PAGE.loader.loaderVer).toBe('5.2.2');
    expect(w().IGLOO).toBeUndefined();
  });

  it("rejects a globalName that contradicts the page's io_global_object_name", async () => {
    w().io_global_object_name = 'CUSTOM_PAGE';
    const error = await failure(api.captureBlackbox({ ...ok, globalName: 'CUSTOM_OTHER' }));
    expect(error.code).toBe('option_conflict');
    expect(error.message).toMatch(/"CUSTOM_PAGE".*"CUSTOM_OTHER"/);
    expect(w().CUSTOM_OTHER).toBeUndefined();
  });
});

describe('one loader run per page', () => {
  it('returns the same promise for the same options and injects nothing more', async () => {
    const onUpdate = () => {};
    const a = api.captureBlackbox({ ...ok, onUpdate });
    const b = api.captureBlackbox({ ...ok, onUpdate });
    expect(b).toBe(a);
    await a;
    expect(api.captureBlackbox({ ...ok, onUpdate })).toBe(a);
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
    expect(requests.filter((u) => u.endsWith('/loader.js'))).toHaveLength(1);
  });

  it('lets a call with other per-call options join the run (SPA remount)', async () => {
    const first = await api.captureBlackbox({ ...ok, onUpdate: () => {} });
    const late: Array<[string, boolean]> = [];
    const second = await api.captureBlackbox({ ...ok, onUpdate: (b, c) => late.push([b, c]) });
    expect(second).toBe(first);
    expect(late).toEqual([[first, true]]);
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });

  it.each([
    ['uriHook', { uriHook: '/other' }],
    ['version', { version: 'early5' }],
    ['globalName', { globalName: 'CUSTOM_X' }],
    ['vendor', { vendor: { tp: false } }],
    ['loaderUrl', { loaderUrl: 'https://vendor.test/loader.js?v=2' }],
  ])('rejects a second call with a different %s with option_conflict', async (name, change) => {
    const first = api.captureBlackbox(ok);
    const error = await failure(api.captureBlackbox({ ...ok, ...change }));
    expect(error.code).toBe('option_conflict');
    expect(error.message).toContain(name);
    await first;
    expect(scriptsFor('https://vendor.test/')).toHaveLength(1);
  });

  it('adopts a loader the page already ran, and refuses settings it never saw', async () => {
    const tag = document.createElement('script');
    w().IGLOO = { loader: { version: 'general5', uri_hook: '/iojs' } };
    tag.src = LOADER_URL;
    document.head.append(tag); // the page's own loader tag, run before the package
    expect(w().IGLOO.loader.loaderVer).toBe('5.2.2');
    const conflictError = await failure(api.captureBlackbox({ ...ok, uriHook: '/elsewhere' }));
    expect(conflictError.code).toBe('option_conflict');
    expect(conflictError.message).toMatch(/loader\.uri_hook.*"\/iojs".*"\/elsewhere"/);
    const bb = await api.captureBlackbox(ok);
    expect(decodeBlackbox(bb)?.sources).toHaveLength(3);
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });
});

/** Each entry's captureBlackbox, for the failures both meet alike (the lean one after freshPage: one run). */
const entries: Array<[string, () => Promise<(options: typeof ok) => Promise<string>>]> = [
  ['the full entry', async () => api.captureBlackbox],
  ['the lean entry', async () => (await import('../../src/browser/lean.js')).captureBlackbox],
];

describe('failures', () => {
  it.each(entries)(
    'loader 404 (%s): loader_failed naming the URL; the tag is removed and a later call retries',
    async (_, entry) => {
      const capture = await entry();
      breakLoader();
      const error = await failure(capture(ok));
      expect(error.code).toBe('loader_failed');
      expect(error.url).toBe(LOADER_URL);
      expect(error.message).toContain(LOADER_URL);
      expect(scriptsFor(LOADER_URL)).toHaveLength(0);
      clearOverrides();
      expect(await capture(ok)).toMatch(/^0400/);
      expect(scriptsFor(LOADER_URL)).toHaveLength(1);
    },
  );

  // Chromium runs an HTML answer as a script: it fails to parse, and `load` still fires.
  // happy-dom throws instead, so these two tests reproduce what Chromium reports;
  // the Playwright suite serves real HTML.
  it('loader answered with something that is not the loader: loader_failed, it did not run', async () => {
    loaderScript('/* an HTML page would stop here with a SyntaxError */');
    const error = await failure(api.captureBlackbox(ok));
    expect(error.code).toBe('loader_failed');
    expect(error.message).toMatch(/did not run.*HTML/);
    expect(scriptsFor(LOADER_URL)).toHaveLength(0);
  });

  it.each(entries)(
    'every collection script failed (%s): collection_failed at once, naming them and the causes',
    async (_, entry) => {
      const capture = await entry();
      breakProxy();
      blockThirdParty();
      const error = await failure(capture({ ...ok, timeoutMs: 5000 } as typeof ok));
      expect(error.code).toBe('collection_failed');
      // The first-party chain stopped at its first script: dyn_wdp.js was never requested.
      expect(error.message).toMatch(/first-party static_wdp\.js, third-party wdp\.js\./);
      expect(requests.some((u) => u.includes('dyn_wdp.js'))).toBe(false);
      expect(error.message).toMatch(/reverse proxy at "\/iojs"/);
      expect(error.message).toMatch(/ad blocker/);
      // A later call runs the loader again (its run-once marker was undone).
      clearOverrides();
      expect(decodeBlackbox(await capture(ok))?.sources).toHaveLength(3);
    },
  );

  it('only the first-party path configured and broken: collection_failed points at the proxy only', async () => {
    breakProxy();
    const error = await failure(api.captureBlackbox({ ...ok, vendor: { tp: false } }));
    expect(error.code).toBe('collection_failed');
    expect(error.message).toMatch(/reverse proxy/);
    expect(error.message).not.toMatch(/ad blocker/);
  });

  it('an HTML page in place of the first-party scripts counts as a failure', async () => {
    const empty = { status: 200, headers: { 'content-type': 'text/html' }, body: '' };
    override(/^https:\/\/shop\.test\/iojs\//, empty);
    blockThirdParty();
    const pending = failure(api.captureBlackbox({ ...ok, timeoutMs: 5000 }));
    await vi.waitFor(() => expect(scriptsFor('https://shop.test/iojs/')).toHaveLength(2));
    for (const file of ['static_wdp.js', 'dyn_wdp.js']) {
      const src = scriptsFor('https://shop.test/iojs/').find((s) => s.src.includes(file))!.src;
      window.dispatchEvent(new ErrorEvent('error', { filename: src, error: new SyntaxError("Unexpected token '<'") }));
    }
    const error = await pending;
    expect(error.code).toBe('collection_failed');
  });

  it('first party broken while the third party still runs: the timeout names the failed scripts and keeps the partial', async () => {
    breakProxy();
    settings.delays = { tp: [5, 5000] };
    const error = await failure(api.captureBlackbox({ ...ok, timeoutMs: 200 }));
    expect(error.code).toBe('timeout');
    expect(error.message).toMatch(
      /Failed so far: first-party static_wdp\.js\. First party: check the reverse proxy at "\/iojs"/,
    );
    expect(decodeBlackbox(error.blackbox)?.sources).toEqual(['tp']);
  });

  it('a runtime error (not a parse error) in a collection script is not taken for a failure', async () => {
    blockThirdParty();
    const pending = api.captureBlackbox(ok);
    await vi.waitFor(() => expect(scriptsFor('https://shop.test/iojs/')).toHaveLength(2));
    // Every first-party script throws at run time: were that taken for a failure, every path would have failed.
    for (const { src } of scriptsFor('https://shop.test/iojs/'))
      window.dispatchEvent(new ErrorEvent('error', { filename: src, error: new TypeError('x is undefined') }));
    expect(decodeBlackbox(await pending)?.sources).toHaveLength(2);
  });

  it('third party blocked (ad blocker): keeps waiting for the first-party result', async () => {
    blockThirdParty();
    const bb = await api.captureBlackbox(ok);
    expect(decodeBlackbox(bb)?.sources.sort()).toEqual(['fp_dyn', 'fp_static']);
    expect(w().IGLOO.loader.io_wdp_load_failure).toBe('true');
  });

  it('a capture that never completes: timeout, with no partial', async () => {
    settings.delays = { fp_static: [5000], fp_dyn: [5000], tp: [5000] };
    const error = await failure(api.captureBlackbox({ ...ok, timeoutMs: 100 }));
    expect(error.code).toBe('timeout');
    expect(error.blackbox).toBeUndefined();
    expect(error.message).toMatch(/100 ms and no update/);
  });

  it('after a timeout the run goes on, and a later call gets the late result without a new loader', async () => {
    settings.delays = { fp_static: [10], fp_dyn: [300], tp: [10] };
    expect((await failure(api.captureBlackbox({ ...ok, timeoutMs: 50 }))).code).toBe('timeout');
    expect(decodeBlackbox(await api.captureBlackbox(ok))?.sources).toHaveLength(3);
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });

  it('a run that ends after its page went away does not throw (a late completion stops watching cleanly)', async () => {
    settings.delays = { fp_static: [5], fp_dyn: [200], tp: [5] };
    expect((await failure(api.captureBlackbox({ ...ok, timeoutMs: 50 }))).code).toBe('timeout');
    const config = w().IGLOO;
    // What a torn-down test environment leaves: no document, no window methods.
    vi.stubGlobal('document', undefined);
    vi.stubGlobal('removeEventListener', undefined);
    try {
      // The late completion, as the collection scripts deliver it: it ends the run and stops watching.
      expect(() => config.bb_callback(config.getBlackbox().blackbox || '0400AAAA', true)).not.toThrow();
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('completion with an empty blackbox is a collection_failed, not a success', async () => {
    loaderScript(
      '(function(){var c=window.IGLOO;c.loader.loaderMain={};setTimeout(function(){c.bb_callback("", true)},5)})()',
    );
    const error = await failure(api.captureBlackbox(ok));
    expect(error.code).toBe('collection_failed');
    expect(error.message).toMatch(/empty/);
  });

  it('abort before the start: aborted, and nothing is written', async () => {
    const controller = new AbortController();
    controller.abort(new Error('left the page'));
    const error = await failure(api.captureBlackbox({ ...ok, signal: controller.signal }));
    expect(error.code).toBe('aborted');
    expect(error.cause).toMatchObject({ message: 'left the page' });
    expect(w().IGLOO).toBeUndefined();
    expect(document.querySelectorAll('script')).toHaveLength(0);
  });

  it('abort during the capture: aborted with the latest partial blackbox', async () => {
    settings.delays = { fp_static: [5], fp_dyn: [5000], tp: [5000] };
    const controller = new AbortController();
    const pending = failure(
      api.captureBlackbox({ ...ok, signal: controller.signal, onUpdate: () => controller.abort() }),
    );
    const error = await pending;
    expect(error.code).toBe('aborted');
    expect(error.blackbox).toMatch(/^0400/);
  });
});

describe('error messages', () => {
  it('are written from a chunk loaded on failure, and carry the failed scripts as data', async () => {
    breakProxy();
    blockThirdParty();
    const error = await failure(api.captureBlackbox(ok));
    expect(error.message).toMatch(
      /^\[blackbox-capture\] Every collection path failed \(the loader requests nothing after a failed script\): first-party static_wdp\.js/,
    );
    expect(error.scripts).toEqual(['fp_static_wdp', 'io_wdp']);
  });

  it('fall back to the code, with every detail kept, when that chunk cannot load (offline)', async () => {
    vi.doMock('../../src/browser/messages.js', () => {
      throw new TypeError('Failed to fetch dynamically imported module');
    });
    try {
      api = await freshPage();
      // fp_static well within the time limit, even on a busy machine; the others far past it.
      settings.delays = { fp_static: [5], fp_dyn: [30_000], tp: [30_000] };
      const error = await failure(api.captureBlackbox({ ...ok, timeoutMs: 1_000 }));
      expect(error).toMatchObject({
        name: 'BlackboxCaptureError',
        code: 'timeout',
        message: '[blackbox-capture] timeout',
        scripts: [],
      });
      expect(decodeBlackbox(error.blackbox)?.sources).toEqual(['fp_static']);
    } finally {
      vi.doUnmock('../../src/browser/messages.js');
    }
  });
});

// With the emulated loader and the real one alike: adopt mode watches the page's own tag, and
// the hints are written before either runs.
describe.each(loaders())('adopt mode (inject: false) and preconnect, %s', (_, loaderSource) => {
  serveLoader(loaderSource);

  it("injects nothing and reports the run of the page's own loader tag that follows", async () => {
    const pending = api.captureBlackbox({ ...ok, inject: false });
    expect(scriptsFor(LOADER_URL)).toHaveLength(0);
    expect(w().IGLOO.loader.version).toBe('general5'); // the config is there before the loader runs
    pageLoaderTag();
    expect(decodeBlackbox(await pending)?.sources).toHaveLength(3);
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });

  it("reports the page's own loader tag failing as loader_failed", async () => {
    breakLoader();
    const pending = failure(api.captureBlackbox({ ...ok, inject: false }));
    pageLoaderTag();
    expect((await pending).code).toBe('loader_failed');
  });

  // Those the package added: the test page carries its own hint for the loader's origin.
  const hints = () =>
    Array.from(document.querySelectorAll<HTMLLinkElement>('link[rel=preconnect]'), (l) =>
      l.getAttribute('href'),
    ).filter((href) => href !== new URL(LOADER_URL).origin);

  it("adds a preconnect hint for the third party's origin, none for the loader's (its fetch starts at once)", async () => {
    await api.captureBlackbox({ ...ok, vendor: { tp_host: 'https://tp.test' } });
    expect(hints()).toEqual(['https://tp.test']);
  });

  it("hints the third party of the page's own config, or else the loader's default host", async () => {
    w().IGLOO = { loader: { tp_host: 'https://tp.test' } };
    await api.captureBlackbox(ok);
    expect(hints()).toEqual(['https://tp.test']);
    api = await freshPage();
    const pending = failure(api.captureBlackbox({ ...ok, timeoutMs: 50 }));
    expect(hints()).toEqual(['https://mpsnare.iesnare.com']);
    await pending;
  });

  it("adds none when the third party is off or on the page's origin", async () => {
    await api.captureBlackbox({ ...ok, vendor: { tp: false } });
    expect(hints()).toEqual([]);
    api = await freshPage();
    await api.captureBlackbox({ ...ok, vendor: { tp_host: 'https://shop.test' }, timeoutMs: 300 }).catch(() => {});
    expect(hints()).toEqual([]);
  });

  it("adds one for a third party whose origin only begins like the page's", async () => {
    await api.captureBlackbox({ ...ok, vendor: { tp_host: 'https://shop.te' }, timeoutMs: 300 }).catch(() => {});
    expect(hints()).toEqual(['https://shop.te']);
  });
});

describe('script tag details', () => {
  it('puts the given nonce on the injected tag', async () => {
    await api.captureBlackbox({ ...ok, nonce: 'n0nce' });
    expect(scriptsFor(LOADER_URL)[0]!.nonce || scriptsFor(LOADER_URL)[0]!.getAttribute('nonce')).toBe('n0nce');
  });

  it("copies the page's nonce when none is given", async () => {
    const pageScript = document.createElement('script');
    pageScript.setAttribute('nonce', 'page-nonce');
    document.head.append(pageScript);
    await api.captureBlackbox(ok);
    const tag = scriptsFor(LOADER_URL)[0]!;
    expect(tag.nonce || tag.getAttribute('nonce')).toBe('page-nonce');
    expect(tag.async).toBe(true);
  });

  it('sets src through a Trusted Types policy when the page has Trusted Types', async () => {
    const created: string[] = [];
    w().trustedTypes = {
      createPolicy: (name: string, rules: { createScriptURL: (u: string) => string }) => ({
        createScriptURL: (u: string) => {
          created.push(name + ' ' + u);
          return rules.createScriptURL(u);
        },
      }),
    };
    try {
      await api.captureBlackbox(ok);
      expect(created).toEqual(['blackbox-capture ' + LOADER_URL]);
    } finally {
      delete w().trustedTypes;
    }
  });

  it('falls back to a plain URL when the CSP does not allow the policy name', async () => {
    w().trustedTypes = {
      createPolicy: () => {
        throw new TypeError('policy not allowed');
      },
    };
    try {
      expect(await api.captureBlackbox(ok)).toMatch(/^0400/);
    } finally {
      delete w().trustedTypes;
    }
  });
});

// collection_failed follows the loader's chains, with the emulated loader and the real one alike.
describe.each(loaders())('failure detection by chain, %s', (_, loaderSource) => {
  serveLoader(loaderSource);
  const notFoundAt = (pattern: RegExp) => override(pattern, notFound);

  it.each([
    [
      'proxy 404 and third party blocked',
      {},
      [/^https:\/\/shop\.test\/iojs\//, /^https:\/\/tp\.test\//],
      ['fp_static_wdp', 'io_wdp'],
    ],
    [
      'static loads, dyn 404 (after it), third party blocked',
      {},
      [/dyn_wdp\.js/, /^https:\/\/tp\.test\//],
      ['fp_dyn_wdp', 'io_wdp'],
    ],
    [
      'tp_split: its static 404, proxy 404',
      { tp_split: true },
      [/^https:\/\/shop\.test\/iojs\//, /^https:\/\/tp\.test\/.*static_wdp/],
      ['fp_static_wdp', 'io_static_wdp'],
    ],
    [
      'tp_split: its dyn 404 after its static loaded, proxy 404',
      { tp_split: true },
      [/^https:\/\/shop\.test\/iojs\//, /^https:\/\/tp\.test\/.*dyn_wdp/],
      ['fp_static_wdp', 'io_dyn_wdp'],
    ],
    [
      'tp_resource custom.js blocked, proxy 404',
      { tp_resource: 'custom.js' },
      [/^https:\/\/shop\.test\/iojs\//, /^https:\/\/tp\.test\//],
      ['fp_static_wdp', 'io_custom'],
    ],
    [
      'fp_static_override_uri 404, third party blocked',
      { fp_static_override_uri: 'https://shop.test/static/override.js' },
      [/override\.js/, /^https:\/\/tp\.test\//],
      ['io_wdp', 'fp_override'],
    ],
    ['third party off, proxy 404', { tp: false }, [/^https:\/\/shop\.test\/iojs\//], ['fp_static_wdp']],
  ])('%s: collection_failed at once, naming the failed scripts', async (_, vendor, broken, scripts) => {
    for (const pattern of broken) notFoundAt(pattern);
    const error = await failure(api.captureBlackbox({ ...ok, timeoutMs: 5000, vendor }));
    expect(error.code).toBe('collection_failed');
    expect(error.scripts).toEqual(scripts);
  });

  it('the analysis at hand before the last chain breaks: a loader completing in its handler of that error is judged first', async () => {
    notFoundAt(/^https:\/\/tp\.test\//);
    notFoundAt(/dyn_wdp\.js/);
    // A loader that breaks its last chain when told, and says "complete" in its own handler of
    // that script's error, as the real one does once every chain has ended.
    loaderScript(`(function () {
      var config = window.IGLOO, loader = config.loader;
      loader.loaderMain = 1;
      function add(src, onerror) {
        var script = document.createElement('script');
        script.src = src;
        script.onerror = onerror;
        document.head.append(script);
      }
      add('https://tp.test/general5/wdp.js', function () {
        loader.io_wdp_load_failure = true;
        config.bb_callback('0400partial', false);
        window.breakLastChain = function () {
          add('https://shop.test/iojs/general5/dyn_wdp.js', function () {
            loader.fp_dyn_wdp_load_failure = true;
            config.bb_callback('0400partial', true);
          });
        };
      });
    })();`);
    const call = failure(api.captureBlackbox({ ...ok, timeoutMs: 5000 }));
    await vi.waitFor(() => expect(typeof w().breakLastChain).toBe('function'));
    // The first error asked for the analysis: at hand in the core once its import has settled.
    await vi.dynamicImportSettled();
    (w().breakLastChain as () => void)();
    const error = await call;
    expect([error.code, error.scripts]).toEqual(['collection_failed', ['fp_dyn_wdp', 'io_wdp']]);
  });

  it('a loader completing in its handler of a script error that breaks no chain: judged, then resolved', async () => {
    notFoundAt(/^https:\/\/cdn\.test\//);
    loaderScript(`(function () {
      var config = window.IGLOO;
      config.loader.loaderMain = 1;
      var script = document.createElement('script');
      script.src = 'https://cdn.test/widget.js';
      script.onerror = function () { config.bb_callback('0400final', true); };
      document.head.append(script);
    })();`);
    const outcomes: unknown[] = [];
    const bb = await api.captureBlackbox({ ...ok, timeoutMs: 5000, onOutcome: (outcome) => outcomes.push(outcome) });
    expect([bb, outcomes]).toEqual(['0400final', [expect.objectContaining({ outcome: 'complete', scripts: [] })]]);
  });

  it('first party broken, third party loading: keeps waiting, and resolves with the third party', async () => {
    notFoundAt(/^https:\/\/shop\.test\/iojs\//);
    expect(decodeBlackbox(await api.captureBlackbox(ok))?.sources).toEqual(['tp']);
  });

  it('tp_split with only its dyn script failing and the first party intact: keeps waiting, and resolves', async () => {
    notFoundAt(/^https:\/\/tp\.test\/.*dyn_wdp/);
    const bb = await api.captureBlackbox({ ...ok, vendor: { tp_split: true } });
    expect(decodeBlackbox(bb)?.sources).toContain('fp_dyn');
  });
});

describe('repeated calls, field events and the final update', () => {
  it('a second identical call while the first is pending gets the same promise, and one loader', async () => {
    const options = { ...ok, timeoutMs: 5000 };
    const first = api.captureBlackbox(options);
    const second = api.captureBlackbox({ ...options });
    expect(second).toBe(first);
    await first;
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });

  it('the field events bubble, so that listeners at the root (React) see them', async () => {
    document.body.innerHTML = '<form><input id="bb"></form>';
    const seen: string[] = [];
    document.addEventListener('input', (e) => seen.push(`input:${(e.target as HTMLInputElement).id}`));
    document.addEventListener('change', (e) => seen.push(`change:${(e.target as HTMLInputElement).id}`));
    await api.captureBlackbox({ ...ok, field: 'bb' });
    expect(seen).toContain('input:bb');
    expect(seen).toContain('change:bb');
  });

  it('enableRip: false reaches the config as enable_rip = false', async () => {
    await api.captureBlackbox({ ...ok, enableRip: false });
    expect(w().IGLOO.enable_rip).toBe(false);
  });

  it('a call after a timeout, with the same options, is not answered with the cached rejection', async () => {
    settings.delays = { fp_static: [5], fp_dyn: [120], tp: [5] };
    const options = { ...ok, timeoutMs: 40 };
    expect((await failure(api.captureBlackbox(options))).code).toBe('timeout');
    await vi.waitFor(() => expect(w().IGLOO.getBlackbox().finished).toBe(true));
    expect(decodeBlackbox(await api.captureBlackbox({ ...options }))?.sources).toHaveLength(3);
  });
});

describe.each(loaders())('an abort at the end of a capture, %s', (_, loaderSource) => {
  serveLoader(loaderSource);

  it("abort from the final update (onUpdate, or a handler of the field's input event): aborted with the final blackbox, told once", async () => {
    const controller = new AbortController();
    const outcomes: string[] = [];
    const input = document.body.appendChild(document.createElement('input'));
    // The page goes once the value is final (the loader says so before it calls back).
    input.addEventListener(
      'input',
      () => w().IGLOO.getBlackbox().finished && controller.abort(new Error('left the page')),
    );
    const capture = api.captureBlackbox({
      ...ok,
      field: input,
      signal: controller.signal,
      onOutcome: (o) => outcomes.push(o.outcome),
    });
    let resolved = false;
    capture.then(
      () => (resolved = true),
      () => {},
    );
    const error = await failure(capture);
    expect([error.code, resolved]).toEqual(['aborted', false]);
    expect(error.blackbox).toBe(input.value);
    await new Promise((r) => setTimeout(r, 20));
    expect(outcomes).toEqual(['aborted']);
  });
});
