// @vitest-environment happy-dom
// The emulated loader in a DOM, without the package, beside the vendor's real loader 5.2.2:
// every case runs with both and must see the same. (The browser conformance suite in
// e2e/conformance.spec.ts compares them request for request in Chromium.)
import { beforeEach, describe, expect, it } from 'vitest';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import {
  freshPage,
  loaders,
  LOADER_URL,
  notFound,
  override,
  requests,
  scriptsFor,
  settings,
} from '../support/vendor-dom.js';

const w = () => window as unknown as Record<string, any>;

/** Runs the loader tag as a page would, synchronously. */
function runLoader() {
  const tag = document.createElement('script');
  tag.src = LOADER_URL;
  document.head.append(tag);
}

function collect(config: Record<string, any>): Promise<Array<[string, boolean]>> {
  const updates: Array<[string, boolean]> = [];
  return new Promise((resolve) => {
    config.bb_callback = (bb: string, complete: boolean) => {
      updates.push([bb, complete]);
      if (complete) resolve(updates);
    };
  });
}

const FP_Q = '?loaderVer=5.2.2&compat=false&tp=true&tp_split=false&fp_static=true&fp_dyn=true&flash=false';

describe.each(loaders())('%s', (_, loaderSource) => {
  beforeEach(async () => {
    await freshPage();
    if (loaderSource !== undefined) settings.loaderSource = loaderSource;
  });

  it('reads window.IGLOO by default, sets loaderMain and loaderVer, and completes once', async () => {
    w().IGLOO = { loader: { version: 'general5' } };
    const updates = collect(w().IGLOO);
    runLoader();
    expect(w().IGLOO.loader.loaderVer).toBe('5.2.2');
    expect(typeof w().IGLOO.loader.loaderMain).toBe('function');
    const list = await updates;
    expect(list.filter(([, c]) => c)).toHaveLength(1);
    const final = list.at(-1)![0];
    expect(final.length).toBeGreaterThanOrEqual(1000);
    expect(final.length).toBeLessThanOrEqual(1500);
    expect(final).toMatch(/^0400[A-Za-z0-9+/]+=*$/);
    expect(final).toContain('+');
    for (const [bb] of list) expect(bb.length).toBeGreaterThanOrEqual(1000);
    expect(w().IGLOO.getBlackbox()).toEqual({ blackbox: final, finished: true });
    expect(decodeBlackbox(final)?.sources.sort()).toEqual(['fp_dyn', 'fp_static', 'tp']);
  });

  it('uses io_global_object_name', async () => {
    w().io_global_object_name = 'CUSTOM_VENDOR';
    w().CUSTOM_VENDOR = { loader: { version: 'general5' } };
    const updates = collect(w().CUSTOM_VENDOR);
    runLoader();
    expect((await updates).at(-1)![1]).toBe(true);
    expect(w().IGLOO).toBeUndefined();
  });

  it('runs once per page: a second copy only traces, to the top-level trace_handler', () => {
    const traces: string[] = [];
    w().IGLOO = { trace_handler: (m: string) => traces.push(m), loader: { version: 'general5' } };
    runLoader();
    const loaded = requests.length;
    runLoader();
    expect(traces.at(-1)).toBe(
      "loader: Loader script has already run, try reducing the number of places it's being included.",
    );
    expect(requests.length).toBe(loaded + 1); // the loader file itself, and no collection script
  });

  it('builds the URLs with the real shapes and query string: first party with flash=false, third party from enable_flash', () => {
    w().IGLOO = { enable_flash: true, loader: { version: 'early5', subkey: 'a/b c', uri_hook: '/iojs/' } };
    runLoader();
    // The trailing slash of uri_hook is collapsed on the first-party path.
    expect(requests).toContain(`https://shop.test/iojs/early5/a%2Fb%20c/static_wdp.js${FP_Q}`);
    expect(requests).toContain(`https://shop.test/iojs/early5/a%2Fb%20c/dyn_wdp.js${FP_Q}`);
    expect(requests).toContain(`https://tp.test/early5/a%2Fb%20c/wdp.js${FP_Q.replace('flash=false', 'flash=true')}`);
  });

  it('chains each list: dyn_wdp.js is requested only after static_wdp.js has loaded', () => {
    override(/static_wdp\.js/, notFound);
    w().IGLOO = { loader: { version: 'general5' } };
    runLoader();
    expect(requests.filter((u) => u.includes('/iojs/'))).toEqual([
      `https://shop.test/iojs/general5/static_wdp.js${FP_Q}`,
    ]);
    expect(w().IGLOO.loader.fp_static_wdp_load_failure).toBe('true');
    expect(w().IGLOO.loader.fp_dyn_wdp_load_failure).toBeUndefined();
  });

  it('without uri_hook uses /iojs/, without version puts versionOrAliasIsRequired in the URLs', () => {
    w().IGLOO = { loader: {} };
    runLoader();
    expect(requests.some((u) => u.startsWith('https://shop.test/iojs/versionOrAliasIsRequired/static_wdp.js?'))).toBe(
      true,
    );
  });

  it('parses booleans as "1"/"0" and "true"/"false", and honours tp, fp_static, fp_dyn', () => {
    w().IGLOO = { loader: { version: 'general5', tp: '0', fp_dyn: 'FALSE' } };
    runLoader();
    expect(scriptsFor('https://shop.test/iojs/').map((s) => s.src.split('?')[0])).toEqual([
      'https://shop.test/iojs/general5/static_wdp.js',
    ]);
    expect(scriptsFor('https://tp.test/')).toHaveLength(0);
  });

  it('tp_split loads two third-party scripts, chained, from tp_host without its trailing slashes', () => {
    w().IGLOO = {
      loader: { version: 'general5', tp_split: '1', fp_static: false, fp_dyn: false, tp_host: 'https://tp.test//' },
    };
    runLoader();
    expect(scriptsFor('https://tp.test/').map((s) => s.src.split('?')[0])).toEqual([
      'https://tp.test/general5/static_wdp.js',
      'https://tp.test/general5/dyn_wdp.js',
    ]);
    expect(w().IGLOO.loader.tp_host).toBe('https://tp.test');
    expect(scriptsFor('https://tp.test/')[0]!.src).toContain('&tp_host=https%3A%2F%2Ftp.test%2F%2F&');
  });

  it('fp_dyn set without fp_static is refused with a trace', () => {
    const traces: string[] = [];
    w().IGLOO = {
      trace_handler: (m: string) => traces.push(m),
      loader: { version: 'general5', fp_static: false, fp_dyn: true },
    };
    runLoader();
    expect(scriptsFor('https://shop.test/iojs/')).toHaveLength(0);
    expect(traces).toContain('loader: Invalid Config, first party dynamic script set to load without static.');
  });

  it('sets the <list>_<file>_load_failure flags; completes with what worked', async () => {
    override(/^https:\/\/tp\.test\//, notFound);
    w().IGLOO = { loader: { version: 'general5' } };
    const updates = collect(w().IGLOO);
    runLoader();
    expect(w().IGLOO.loader.io_wdp_load_failure).toBe('true');
    const final = (await updates).at(-1)![0];
    expect(decodeBlackbox(final)?.sources.sort()).toEqual(['fp_dyn', 'fp_static']);
  });

  it('a tp_resource names its own flag', () => {
    override(/^https:\/\/tp\.test\//, notFound);
    w().IGLOO = { loader: { version: 'general5', tp_resource: 'custom.js' } };
    runLoader();
    expect(w().IGLOO.loader.io_custom_load_failure).toBe('true');
  });

  it('without bb_callback fills bbout_element_id', async () => {
    document.body.innerHTML = '<input id="out">';
    w().IGLOO = { bbout_element_id: 'out', loader: { version: 'general5' } };
    runLoader();
    await expect.poll(() => w().IGLOO.getBlackbox().finished).toBe(true);
    expect((document.getElementById('out') as HTMLInputElement).value).toBe(w().IGLOO.getBlackbox().blackbox);
  });

  it('the blackbox records which sources contributed', async () => {
    override(/^https:\/\/shop\.test\/iojs\//, notFound);
    w().IGLOO = { loader: { version: 'general5' } };
    const updates = collect(w().IGLOO);
    runLoader();
    expect(decodeBlackbox((await updates).at(-1)![0])?.sources).toEqual(['tp']);
  });
});
