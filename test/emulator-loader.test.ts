// @vitest-environment happy-dom
// The emulated loader in a DOM, without the package: it must behave like loader 5.2.2.
import { beforeEach, describe, expect, it } from 'vitest';
import { decodeBlackbox } from '../src/emulator/vendor/routes.js';
import { freshPage, LOADER_URL, notFound, override, requests, scriptsFor } from './support/vendor-dom.js';

const w = () => window as unknown as Record<string, any>;
beforeEach(async () => {
  await freshPage();
});

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

describe('emulated loader 5.2.2', () => {
  it('reads window.IGLOO by default, sets loaderMain and loaderVer, and completes once', async () => {
    w().IGLOO = { loader: { version: 'general5' } };
    const updates = collect(w().IGLOO);
    runLoader();
    expect(w().IGLOO.loader.loaderVer).toBe('5.2.2');
    expect(w().IGLOO.loader.loaderMain).toBeTruthy();
    const list = await updates;
    expect(list.filter(([, c]) => c)).toHaveLength(1);
    const final = list.at(-1)![0];
    expect(final.length).toBeGreaterThanOrEqual(1000);
    expect(final.length).toBeLessThanOrEqual(1500);
    expect(final).toMatch(/^0400[A-Za-z0-9+/]+=*$/);
    expect(final).toContain('+');
    for (const [bb] of list) expect(bb.length).toBeGreaterThanOrEqual(1000);
    expect(w().IGLOO.getBlackbox()).toEqual({ blackbox: final, finished: true });
  });

  it('uses io_global_object_name', async () => {
    w().io_global_object_name = 'CUSTOM_VENDOR';
    w().CUSTOM_VENDOR = { loader: { version: 'general5' } };
    const updates = collect(w().CUSTOM_VENDOR);
    runLoader();
    expect((await updates).at(-1)![1]).toBe(true);
    expect(w().IGLOO).toBeUndefined();
  });

  it('runs once per page: a second copy only traces', () => {
    const traces: string[] = [];
    w().IGLOO = { loader: { version: 'general5', trace_handler: (m: string) => traces.push(m) } };
    runLoader();
    const loaded = requests.length;
    runLoader();
    expect(traces).toContain('loader: Loader script has already run, ignoring this copy. Configuration changes made after the first run have no effect.');
    expect(requests.length).toBe(loaded + 1); // the loader file itself, and no collection script
  });

  it('builds the URLs with the real shapes and query string', () => {
    w().IGLOO = { enable_flash: false, loader: { version: 'early5', subkey: 'a/b c', uri_hook: '/proxy/iojs/' } };
    runLoader();
    const q = '?loaderVer=5.2.2&compat=false&tp=true&tp_split=false&fp_static=true&fp_dyn=true&flash=false';
    expect(requests).toContain(`https://shop.test/proxy/iojs/early5/a%2Fb%20c/static_wdp.js${q}`);
    expect(requests).toContain(`https://shop.test/proxy/iojs/early5/a%2Fb%20c/dyn_wdp.js${q}`);
    expect(requests).toContain(`https://tp.test/early5/a%2Fb%20c/wdp.js${q}`);
  });

  it('without uri_hook uses /iojs/, without version puts versionOrAliasIsRequired in the URLs', () => {
    const traces: string[] = [];
    w().IGLOO = { loader: { trace_handler: (m: string) => traces.push(m) } };
    runLoader();
    expect(requests.some((u) => u.startsWith('https://shop.test/iojs/versionOrAliasIsRequired/static_wdp.js?'))).toBe(true);
    expect(traces).toContain('loader: version is required');
  });

  it('parses booleans as "1"/"0" and "true"/"false", and honours tp, fp_static, fp_dyn, tp_split, tp_host', () => {
    w().IGLOO = { loader: { version: 'general5', tp: '0', fp_dyn: 'false' } };
    runLoader();
    expect(scriptsFor('https://shop.test/iojs/').map((s) => s.src.split('?')[0])).toEqual(['https://shop.test/iojs/general5/static_wdp.js']);
    expect(scriptsFor('https://tp.test/')).toHaveLength(0);
  });

  it('tp_split loads two third-party scripts from tp_host', () => {
    w().IGLOO = { loader: { version: 'general5', tp_split: '1', fp_static: false, fp_dyn: false, tp_host: 'https://tp.test' } };
    runLoader();
    expect(scriptsFor('https://tp.test/').map((s) => s.src.split('?')[0])).toEqual([
      'https://tp.test/general5//static_wdp.js',
      'https://tp.test/general5//dyn_wdp.js',
    ]);
  });

  it('fp_dyn without fp_static is refused with a trace', () => {
    const traces: string[] = [];
    w().IGLOO = { loader: { version: 'general5', fp_static: false, trace_handler: (m: string) => traces.push(m) } };
    runLoader();
    expect(scriptsFor('https://shop.test/iojs/')).toHaveLength(0);
    expect(traces.some((m) => /fp_dyn is invalid without fp_static/.test(m))).toBe(true);
  });

  it('sets the *_load_failure flags and traces failed scripts; completes with what worked', async () => {
    const traces: string[] = [];
    override(/^https:\/\/tp\.test\//, notFound);
    w().IGLOO = { loader: { version: 'general5', trace_handler: (m: string) => traces.push(m) } };
    const updates = collect(w().IGLOO);
    runLoader();
    expect(w().IGLOO.loader.io_wdp_load_failure).toBe('true');
    expect(traces.some((m) => m.startsWith('loader: failed to load third-party script'))).toBe(true);
    const final = (await updates).at(-1)![0];
    expect(decodeBlackbox(final)?.sources.sort()).toEqual(['fp_dyn', 'fp_static']);
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
