// @vitest-environment happy-dom
// blackbox-capture/lean (src/browser/lean.ts): the smallest call on the page's one run (loader-run.ts),
// its option rules, its refusals, and its sharing of the run with the full entry (capture.ts). The
// failures both entries meet alike are tested for both in capture.test.ts.
import { beforeEach, describe, expect, it } from 'vitest';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import {
  failure,
  freshPage,
  LOADER_URL,
  loaders,
  requests,
  scriptsFor,
  serveLoader,
  settings,
  w,
} from '../support/vendor-dom.js';

let full: Awaited<ReturnType<typeof freshPage>>;
let lean: typeof import('../../src/browser/lean.js');
beforeEach(async () => {
  full = await freshPage();
  // After freshPage's reset: the same module registry as `full`, so one loader-run.ts, as on a page.
  lean = await import('../../src/browser/lean.js');
});

const ok = { loaderUrl: LOADER_URL };
const sources = (blackbox: string | undefined) => decodeBlackbox(blackbox!)?.sources.sort();

describe.each(loaders())('with the %s', (_, loaderSource) => {
  serveLoader(loaderSource);

  it('resolves with the final blackbox, the config object written with its defaults, one loader tag', async () => {
    const blackbox = await lean.captureBlackbox({ ...ok, uriHook: '/iojs' });
    expect(sources(blackbox)).toEqual(['fp_dyn', 'fp_static', 'tp']);
    expect(w().IGLOO.loader).toMatchObject({ version: 'general5', uri_hook: '/iojs', loaderVer: '5.2.2' });
    expect(w().IGLOO.enable_rip).toBe(true);
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });
});

describe('the lean call', () => {
  it.each(['lean', 'full'])('%s entry: the loader request goes out before the run adds its watch', async (entry) => {
    // The watch's listeners wait a task for any event: added after the tag, they miss none, and
    // the loader's fetch starts before that work (docs/performance.md#script-time).
    const tagged: boolean[] = [];
    const add = document.addEventListener.bind(document);
    Object.assign(document, {
      addEventListener: (type: string, ...rest: [EventListener, boolean]) => {
        if (type === 'load') tagged.push(scriptsFor(LOADER_URL).length === 1);
        add(type, ...rest);
      },
    });
    try {
      await (entry === 'lean' ? lean : full).captureBlackbox(ok);
    } finally {
      delete (document as unknown as Record<string, unknown>).addEventListener;
    }
    expect(tagged).toEqual([true]);
  });

  it('writes its uriHook to the config object as the call starts', () => {
    void lean.captureBlackbox({ ...ok, uriHook: '/first-party' }).catch(() => {});
    expect(w().IGLOO.loader.uri_hook).toBe('/first-party');
  });

  it("writes the config object the page's io_global_object_name names", async () => {
    w().io_global_object_name = 'CUSTOM_LEAN';
    await lean.captureBlackbox(ok);
    expect(w().CUSTOM_LEAN.loader.loaderVer).toBe('5.2.2');
    expect(w().IGLOO).toBeUndefined();
  });

  it('times out with the partial blackbox', async () => {
    settings.delays = { fp_static: [5], fp_dyn: [5000], tp: [5000] };
    const error = await failure(lean.captureBlackbox({ ...ok, timeoutMs: 150 }));
    expect(error.code).toBe('timeout');
    expect(sources(error.blackbox)).toEqual(['fp_static']);
    expect(error.message).toMatch(/150 ms.*partial/);
  });

  it("gives the loader tag the page's CSP nonce", async () => {
    document.head.insertAdjacentHTML('beforeend', '<script nonce="page-nonce"></script>');
    void lean.captureBlackbox(ok).catch(() => {});
    expect(scriptsFor(LOADER_URL)[0]!.nonce).toBe('page-nonce');
  });

  it("gives the loader tag the option's nonce over the page's", async () => {
    document.head.insertAdjacentHTML('beforeend', '<script nonce="page-nonce"></script>');
    void lean.captureBlackbox({ ...ok, nonce: 'option-nonce' }).catch(() => {});
    expect(scriptsFor(LOADER_URL)[0]!.nonce).toBe('option-nonce');
  });

  it("with inject: false, adds no tag: the page's own runs the loader", async () => {
    const pending = lean.captureBlackbox({ ...ok, inject: false });
    expect(scriptsFor(LOADER_URL)).toHaveLength(0);
    const tag = Object.assign(document.createElement('script'), { src: LOADER_URL });
    document.head.append(tag);
    expect(sources(await pending)).toEqual(['fp_dyn', 'fp_static', 'tp']);
  });

  it('identical calls share one promise; an identical call of the full entry joins the run with its own', async () => {
    const first = lean.captureBlackbox(ok);
    expect(lean.captureBlackbox({ ...ok })).toBe(first);
    const fromFull = full.captureBlackbox({ ...ok });
    expect(fromFull).not.toBe(first);
    expect(await fromFull).toBe(await first);
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });

  it("a page config's bbout_element_id fails the lean call only: an identical full-entry call writes it, either order", async () => {
    document.body.innerHTML = '<input id="page-field">';
    w().IGLOO = { bbout_element_id: 'page-field' };
    const leanFirst = failure(lean.captureBlackbox(ok));
    const fullAfter = full.captureBlackbox(ok);
    const fullFirst = full.captureBlackbox({ ...ok, timeoutMs: 5000 });
    const leanAfter = failure(lean.captureBlackbox({ ...ok, timeoutMs: 5000 }));
    const blackbox = await fullAfter;
    expect(await fullFirst).toBe(blackbox);
    expect((document.getElementById('page-field') as HTMLInputElement).value).toBe(blackbox);
    for (const error of [await leanFirst, await leanAfter]) expect(error.message).toMatch(/lean writes no field/);
  });

  it('calls with other time limits join one run: one that times out leaves, the others still resolve', async () => {
    settings.delays = { fp_static: [5], fp_dyn: [300], tp: [300] };
    const short = failure(lean.captureBlackbox({ ...ok, timeoutMs: 100 }));
    const long = lean.captureBlackbox({ ...ok, timeoutMs: 5000 });
    const longer = lean.captureBlackbox({ ...ok, timeoutMs: 6000 });
    expect((await short).code).toBe('timeout');
    expect(sources(await long)).toEqual(['fp_dyn', 'fp_static', 'tp']);
    expect(await longer).toBe(await long);
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });

  it('a call that resolved stays joinable past its time limit: the same promise again', async () => {
    const first = lean.captureBlackbox({ ...ok, timeoutMs: 300 });
    await first;
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(lean.captureBlackbox({ ...ok, timeoutMs: 300 })).toBe(first);
  });

  it('a full-entry call joins the run a lean call started, its traces and field included', async () => {
    document.body.innerHTML = '<input id="bb">';
    const traces: string[] = [];
    const first = lean.captureBlackbox(ok);
    const joined = full.captureBlackbox({ ...ok, field: 'bb', onTrace: (message) => traces.push(message) });
    const [a, b] = await Promise.all([first, joined]);
    expect(b).toBe(a);
    expect((document.getElementById('bb') as HTMLInputElement).value).toBe(a);
    expect(traces).toContain('emulator: collection complete');
    expect(scriptsFor(LOADER_URL)).toHaveLength(1);
  });

  it('a lean call that asks the running loader for other settings: option_conflict, either way round', async () => {
    void full.captureBlackbox({ ...ok, globalName: 'CUSTOM_FULL' }).catch(() => {});
    const error = await failure(lean.captureBlackbox(ok));
    expect(error.code).toBe('option_conflict');
    expect(error.message).toMatch(/globalName/);
    full = await freshPage();
    lean = await import('../../src/browser/lean.js');
    void lean.captureBlackbox(ok).catch(() => {});
    expect((await failure(full.captureBlackbox({ ...ok, uriHook: '/other' }))).code).toBe('option_conflict');
  });

  it('a page config naming bbout_element_id: lean_field, the error carrying the blackbox, never a silent skip', async () => {
    document.body.innerHTML = '<input id="page-field">';
    w().IGLOO = { bbout_element_id: 'page-field' };
    const error = await failure(lean.captureBlackbox(ok));
    expect(error.code).toBe('invalid_option');
    expect(error.message).toMatch(/bbout_element_id "page-field".*blackbox-capture\/lean writes no field/);
    expect(error.blackbox).toMatch(/^0400/);
    expect((document.getElementById('page-field') as HTMLInputElement).value).toBe('');
  });
});

describe('its option rules', () => {
  it.each([
    ['field', { field: 'bb' }],
    ['post', { post: '/risk' }],
    ['onUpdate', { onUpdate: () => {} }],
    ['globalName', { globalName: 'X' }],
    ['signal', { signal: new AbortController().signal }],
    ['vendor', { vendor: {} }],
  ])('refuses %s by name, pointing at the full entry, before anything on the page changes', async (name, extra) => {
    const error = await failure(lean.captureBlackbox({ ...ok, ...extra } as never));
    expect(error.code).toBe('invalid_option');
    expect(error.message).toContain(`Option "${name}" needs the full entry`);
    expect(error.message).toContain('takes loaderUrl, uriHook, timeoutMs, nonce, inject');
    expect(w().IGLOO).toBeUndefined();
    expect(requests).toEqual([]);
  });

  it.each([
    ['no loaderUrl', {}, 'loaderUrl'],
    ['a loader on another host over http', { loaderUrl: 'http://vendor.test/loader.js' }, 'loaderUrl'],
    ['a loader on "//host"', { loaderUrl: '//vendor.test/loader.js' }, 'loaderUrl'],
    ['a complete URL as uriHook', { ...ok, uriHook: 'https://shop.test/iojs' }, 'uriHook'],
  ])('refuses %s: invalid_option naming it', async (_, options, name) => {
    const error = await failure(lean.captureBlackbox(options as never));
    expect(error.code).toBe('invalid_option');
    expect(error.message).toContain(`"${name}"`);
    expect(scriptsFor('')).toHaveLength(0);
  });

  it.each([
    ['timeoutMs', 0],
    ['timeoutMs', Number.NaN],
    ['timeoutMs', 3e9],
    ['timeoutMs', '5000'],
    ['inject', 'false'],
    ['nonce', ''],
  ])('in development, refuses %s: %s as the full entry does (options.ts)', async (name, value) => {
    const error = await failure(lean.captureBlackbox({ ...ok, [name]: value } as never));
    expect(error.code).toBe('invalid_option');
    expect(error.message).toContain(`"${name}"`);
    expect(scriptsFor('')).toHaveLength(0);
  });

  it('takes an undefined value as the default, for any option name, as the full entry does', async () => {
    const options = { ...ok, uriHook: undefined, field: undefined, post: undefined };
    expect(sources(await lean.captureBlackbox(options as never))).toEqual(['fp_dyn', 'fp_static', 'tp']);
    expect(w().IGLOO.loader.uri_hook).toBe('/iojs');
  });

  it('refuses options that are not an object', async () => {
    expect((await failure(lean.captureBlackbox('/loader.js' as never))).code).toBe('invalid_option');
  });
});
