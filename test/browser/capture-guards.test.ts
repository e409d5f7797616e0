// @vitest-environment happy-dom
// captureBlackbox's guards that only a second call, a late callback, an unrelated script or
// a pre-set page value reach.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeBlackbox } from '../../src/emulator/scripts/routes.js';
import {
  blockThirdParty,
  breakLoader,
  breakProxy,
  failure,
  freshPage,
  LOADER_URL,
  loaders,
  loaderScript,
  ok,
  pageLoaderTag,
  requests,
  scriptsFor,
  serveLoader,
  settings,
  w,
} from '../support/vendor-dom.js';
import type { CaptureOutcome } from '../../src/shared/types.js';

let api: Awaited<ReturnType<typeof freshPage>>;
beforeEach(async () => {
  api = await freshPage();
});

// The vendor's real loader 5.2.2 is the reference: every case runs with it and with the emulator's.
describe.each(loaders())('with the %s', (_, loaderSource) => {
  serveLoader(loaderSource);

  describe('calls that meet a run', () => {
    it('a call with other keys (post, then field) is compared key by key without throwing', async () => {
      const field = Object.assign(document.createElement('input'), { id: 'bb' });
      document.body.append(field);
      const fetch = (async () => new Response('{}')) as typeof globalThis.fetch;
      const first = await api.captureBlackbox({ ...ok, post: { url: '/risk', fetch } });
      expect(await api.captureBlackbox({ ...ok, field: 'bb' })).toBe(first);
      expect(field.value).toBe(first);
    });

    it('a failed call leaves the other calls cached: an identical call still gets the same promise', async () => {
      settings.delays = { fp_static: [5], fp_dyn: [150], tp: [5] };
      const onUpdate = () => {};
      const pending = api.captureBlackbox({ ...ok, onUpdate });
      expect((await failure(api.captureBlackbox({ ...ok, timeoutMs: 20 }))).code).toBe('timeout');
      expect(api.captureBlackbox({ ...ok, onUpdate })).toBe(pending);
      await pending;
    });

    it('a second call while the run is going starts no second run', async () => {
      const a = api.captureBlackbox({ ...ok, onUpdate: () => {} });
      const b = api.captureBlackbox({ ...ok, onTrace: () => {} });
      expect(await b).toBe(await a);
      expect(scriptsFor(LOADER_URL)).toHaveLength(1);
      expect(requests.filter((u) => u.endsWith('/loader.js'))).toHaveLength(1);
    });

    it('a late caller catching up writes the same value again without new input events', async () => {
      const field = document.createElement('input');
      document.body.append(field);
      const events: string[] = [];
      field.addEventListener('input', () => events.push(field.value));
      const bb = await api.captureBlackbox({ ...ok, field });
      expect(events.at(-1)).toBe(bb);
      const count = events.length;
      await api.captureBlackbox({ ...ok, field, onUpdate: () => {} });
      expect(events).toHaveLength(count);
    });
  });

  describe('values that arrive late or are not blackboxes', () => {
    it('a bb_callback with something other than a string is ignored', async () => {
      settings.delays = { fp_static: [30], fp_dyn: [30], tp: [30] };
      const updates: unknown[] = [];
      const pending = api.captureBlackbox({ ...ok, onUpdate: (b) => updates.push(b) });
      w().IGLOO.bb_callback(42, true);
      w().IGLOO.bb_callback(undefined, true);
      const bb = await pending;
      expect(decodeBlackbox(bb)?.sources).toHaveLength(3);
      expect(updates.every((u) => typeof u === 'string')).toBe(true);
    });

    it('after completion, later values change nothing: not the field, not a later call', async () => {
      const field = document.createElement('input');
      document.body.append(field);
      const bb = await api.captureBlackbox({ ...ok, field });
      w().IGLOO.bb_callback('0400AAAA', true);
      expect(field.value).toBe(bb);
      expect(await api.captureBlackbox({ ...ok, onUpdate: () => {} })).toBe(bb);
    });

    it('failure flags and script errors after completion fail nothing and start no second run', async () => {
      const bb = await api.captureBlackbox(ok);
      Object.assign(w().IGLOO.loader, { fp_static_wdp_load_failure: 'true', io_wdp_load_failure: 'true' });
      window.dispatchEvent(
        new ErrorEvent('error', {
          filename: 'https://shop.test/iojs/general5/static_wdp.js',
          error: new SyntaxError('x'),
        }),
      );
      await new Promise((r) => setTimeout(r, 20));
      expect(await api.captureBlackbox({ ...ok, onTrace: () => {} })).toBe(bb);
      expect(w().IGLOO.loader.loaderMain).toBeDefined();
      expect(scriptsFor(LOADER_URL)).toHaveLength(1);
    });

    it('another script of the page loading before the loader ran is not taken for the loader', async () => {
      settings.delays = { fp_static: [5], fp_dyn: [5], tp: [5] };
      loaderScript('/* slow */');
      const pending = failure(api.captureBlackbox({ ...ok, timeoutMs: 100 }));
      const other = document.createElement('script');
      document.head.append(other);
      other.dispatchEvent(new Event('load'));
      // The loader tag itself loaded without running: that one is loader_failed.
      const error = await pending;
      expect(error.code).toBe('loader_failed');
      expect(error.message).toMatch(/loaded but did not run|did not run/);
    });

    it('a loader that cannot load is loader_failed saying so, not "did not run"', async () => {
      breakLoader();
      const error = await failure(api.captureBlackbox(ok));
      expect(error.code).toBe('loader_failed');
      expect(error.message).not.toMatch(/did not run/);
    });
  });

  describe('failed first-party scripts by name', () => {
    it('an HTML page in place of static and dyn (URLs with a query): collection_failed names fp_static_wdp and fp_dyn_wdp', async () => {
      // An HTML page never delivers: the first-party scripts must not complete before their errors.
      settings.delays = { fp_static: [10_000], fp_dyn: [10_000] };
      blockThirdParty();
      const pending = failure(api.captureBlackbox({ ...ok, timeoutMs: 5000 }));
      await vi.waitFor(() => expect(scriptsFor('https://shop.test/iojs/').length).toBeGreaterThan(0));
      for (const file of ['static_wdp.js', 'dyn_wdp.js']) {
        window.dispatchEvent(
          new ErrorEvent('error', {
            filename: `https://shop.test/iojs/general5/${file}?loaderVer=5.2.2`,
            error: new SyntaxError("Unexpected token '<'"),
          }),
        );
      }
      const error = await pending;
      expect(error.code).toBe('collection_failed');
      expect(error.scripts).toEqual(expect.arrayContaining(['fp_static_wdp', 'fp_dyn_wdp']));
    });

    it("a parse error in a script outside the proxy path is not the vendor's", async () => {
      settings.delays = { fp_static: [40], fp_dyn: [40], tp: [40] };
      blockThirdParty();
      const pending = api.captureBlackbox({ ...ok, timeoutMs: 5000 });
      window.dispatchEvent(
        new ErrorEvent('error', { filename: 'https://shop.test/app/main.js', error: new SyntaxError('x') }),
      );
      window.dispatchEvent(
        new ErrorEvent('error', { filename: 'https://shop.test/iojsx/static_wdp.js', error: new SyntaxError('x') }),
      );
      window.dispatchEvent(
        new ErrorEvent('error', {
          filename: 'https://shop.test/iojs/general5/static_wdp.js',
          error: new TypeError('x'),
        }),
      );
      expect(decodeBlackbox(await pending)?.sources).toBeDefined();
    });

    it('the static override counts as first party: its parse error names it', async () => {
      blockThirdParty();
      const pending = failure(
        api.captureBlackbox({ ...ok, vendor: { fp_static_override_uri: '/static/fp_static.js' }, timeoutMs: 5000 }),
      );
      await new Promise((r) => setTimeout(r, 5));
      window.dispatchEvent(
        new ErrorEvent('error', { filename: 'https://shop.test/static/fp_static.js?x=1', error: new SyntaxError('x') }),
      );
      window.dispatchEvent(
        new ErrorEvent('error', {
          filename: 'https://shop.test/iojs/general5/dyn_wdp.js',
          error: new SyntaxError('x'),
        }),
      );
      const error = await pending;
      expect(error.code).toBe('collection_failed');
      expect(error.scripts).toEqual(expect.arrayContaining(['fp_fp_static']));
    });

    it('collection_failed undoes the run-once marker and the flags, and keeps the settings', async () => {
      breakProxy();
      blockThirdParty();
      // The page's own keys that only look like the loader's are kept; a flag whose name is its
      // prefix and its ending alone (fp_ + _load_failure) is the loader's.
      const lookalikes = { xloaderMain: 1, loaderVerX: 1, xio_wdp_load_failure: 1, io_wdp_load_failure_count: 1 };
      w().IGLOO = { loader: { ...lookalikes, fp_load_failure: 'true' } };
      await failure(api.captureBlackbox({ ...ok, subkey: 'SUB' }));
      const loader = w().IGLOO.loader;
      expect(loader.loaderMain).toBeUndefined();
      expect(loader.loaderVer).toBeUndefined();
      expect(Object.keys(loader).filter((k) => k.endsWith('_load_failure') && !(k in lookalikes))).toEqual([]);
      expect(loader).toMatchObject({ ...lookalikes, subkey: 'SUB', uri_hook: '/iojs', version: 'general5' });
    });
  });

  describe('the page', () => {
    it('no nonce anywhere: the injected tag carries none', async () => {
      await api.captureBlackbox(ok);
      const tag = scriptsFor(LOADER_URL)[0]!;
      expect(tag.nonce || tag.getAttribute('nonce') || '').toBe('');
    });

    it('a globalName on a page that named none is used as it is', async () => {
      await api.captureBlackbox({ ...ok, globalName: 'CUSTOM_A' });
      expect(w().io_global_object_name).toBe('CUSTOM_A');
      expect(w().CUSTOM_A.loader.loaderMain).toBeDefined();
    });

    it("a conflict with the page's io_global_object_name names both", async () => {
      w().io_global_object_name = 'CUSTOM_B';
      const error = await failure(api.captureBlackbox({ ...ok, globalName: 'CUSTOM_C' }));
      expect(error.code).toBe('option_conflict');
      expect(error.message).toMatch(/io_global_object_name.*"CUSTOM_B".*"CUSTOM_C"/);
    });

    it("the page's enable_rip stays when the option is not given", async () => {
      w().IGLOO = { enable_rip: false };
      await api.captureBlackbox(ok);
      expect(w().IGLOO.enable_rip).toBe(false);
    });

    it('adopting a loader that ran without a setting the call leaves out is no conflict', async () => {
      w().IGLOO = { loader: { version: 'general5', uri_hook: '/iojs', subkey: 'PAGE' } };
      pageLoaderTag();
      expect(decodeBlackbox(await api.captureBlackbox(ok))?.sources).toHaveLength(3);
      expect(w().IGLOO.loader.subkey).toBe('PAGE');
    });

    it('a loader that already finished: its blackbox at once, no tag, no hint', async () => {
      w().IGLOO = { loader: { version: 'general5', uri_hook: '/iojs' } };
      pageLoaderTag();
      await vi.waitFor(() => expect(w().IGLOO.getBlackbox().finished).toBe(true));
      const tags = document.querySelectorAll('script').length;
      const links = document.querySelectorAll('link').length;
      const bb = await api.captureBlackbox(ok);
      expect(bb).toBe(w().IGLOO.getBlackbox().blackbox);
      expect(document.querySelectorAll('script')).toHaveLength(tags);
      expect(document.querySelectorAll('link')).toHaveLength(links);
    });

    it('a loader that ran with a failed first party: only its own failure flags count, by name', async () => {
      const outcomes: CaptureOutcome[] = [];
      w().IGLOO = {
        loader: {
          loaderMain: true,
          fp_static_wdp_load_failure: 'true',
          // Keys that look like flags but are not the loader's: none names a failed script.
          xio_wdp_load_failure: 'true',
          io_wdp_load_failure_count: 'true',
          tp_io_wdp_load_failure: 'true',
          io_dyn_wdp_load_failure: 'false',
        },
        getBlackbox: () => ({ blackbox: '0400TPONLY', finished: true }),
      };
      expect(await api.captureBlackbox({ ...ok, onOutcome: (outcome) => outcomes.push(outcome) })).toBe('0400TPONLY');
      expect(outcomes).toEqual([
        expect.objectContaining({ outcome: 'degraded-first-party', scripts: ['fp_static_wdp'] }),
      ]);
      expect(scriptsFor(LOADER_URL)).toHaveLength(0);
    });

    it('a loader that ran without getBlackbox (another version): the call waits for its bb_callback', async () => {
      w().IGLOO = { loader: { loaderMain: true } };
      const pending = api.captureBlackbox({ ...ok, timeoutMs: 1000 });
      w().IGLOO.bb_callback('0400LATE', true);
      expect(await pending).toBe('0400LATE');
    });

    it("the page's own loader tag already there (without adopt mode): no second tag", async () => {
      w().IGLOO = { loader: { version: 'general5', uri_hook: '/iojs' } };
      const own = document.createElement('script');
      own.src = LOADER_URL;
      own.type = 'text/plain'; // present, not yet run
      document.head.append(own);
      const pending = api.captureBlackbox({ ...ok, timeoutMs: 100 });
      expect(scriptsFor(LOADER_URL)).toHaveLength(1);
      expect((await failure(pending)).code).toBe('timeout');
    });

    it.each([['my-input'], ['input-x'], ['xinput']])(
      'a field that is a <%s> element is invalid_option',
      async (tag) => {
        const element = document.createElement(tag);
        element.id = 'f';
        document.body.append(element);
        expect((await failure(api.captureBlackbox({ ...ok, field: 'f' }))).code).toBe('invalid_option');
      },
    );
  });

  describe('Trusted Types', () => {
    it('the policy is created once per page, however many runs', async () => {
      let created = 0;
      w().trustedTypes = {
        createPolicy: (_: string, rules: { createScriptURL: (u: string) => string }) => {
          created++;
          return { createScriptURL: rules.createScriptURL };
        },
      };
      try {
        breakLoader();
        await failure(api.captureBlackbox(ok));
        await failure(api.captureBlackbox(ok));
        expect(created).toBe(1);
        expect(requests.filter((u) => u.endsWith('/loader.js'))).toHaveLength(2);
      } finally {
        delete w().trustedTypes;
      }
    });

    it('enforced, and refusing our URL: loader_failed at once, nothing injected', async () => {
      w().trustedTypes = {
        createPolicy: () => ({
          createScriptURL: () => {
            throw new TypeError('refused by the default policy');
          },
        }),
      };
      try {
        const error = await failure(api.captureBlackbox(ok));
        expect(error.code).toBe('loader_failed');
        expect(error.cause).toBeInstanceOf(TypeError);
        expect(scriptsFor(LOADER_URL)).toHaveLength(0);
      } finally {
        delete w().trustedTypes;
      }
    });
  });
});
