// @vitest-environment happy-dom
// A hostile page config (issue #57): a config object that refuses the package's writes, or a
// bbout_element_id naming an element without a value, is a typed error, never a raw one, and
// the page run's state is left clean, so that the next capture (even with another loader URL)
// works. capture.ts is the same module in both builds.
import { beforeEach, describe, expect, it } from 'vitest';
import { failure, freshPage, LOADER_URL, ok, scriptsFor, w } from '../support/vendor-dom.js';

let api: Awaited<ReturnType<typeof freshPage>>;
beforeEach(async () => {
  api = await freshPage();
});

/** Another loader URL: a call that starts the page's run afresh, not one that joins it. */
const OTHER_LOADER = LOADER_URL + '?second';

describe('a page config that refuses the writes', () => {
  it.each([
    ['a frozen window.IGLOO', () => Object.freeze({ subkey: 'x' }), /already holds an object \(frozen\)/],
    ['a sealed window.IGLOO', () => Object.seal({ loader: {} }), /already holds an object \(sealed\)/],
    ['a frozen loader object', () => ({ loader: Object.freeze({}) }), /already holds an object,/],
    [
      'a read-only bb_callback',
      () => Object.defineProperty({}, 'bb_callback', { value: () => {}, writable: false, enumerable: true }),
      /already holds an object,/,
    ],
    [
      'a bb_callback that throws when read',
      () =>
        Object.defineProperty({}, 'bb_callback', {
          get() {
            throw new Error('no');
          },
          enumerable: true,
        }),
      /already holds an object,/,
    ],
    [
      'a bb_callback that throws when written',
      () =>
        Object.defineProperty({}, 'bb_callback', {
          get: () => undefined,
          set() {
            throw new Error('no');
          },
        }),
      /already holds an object,/,
    ],
  ])('%s: invalid_option naming it, nothing injected; the next capture works', async (_, make, shown) => {
    w().IGLOO = make();
    const error = await failure(api.captureBlackbox(ok));
    expect(error).toMatchObject({ name: 'BlackboxCaptureError', code: 'invalid_option' });
    expect(error.message).toMatch(/window\.IGLOO/);
    expect(error.message).toMatch(shown);
    expect(error.cause).toBeInstanceOf(Error);
    expect(scriptsFor(LOADER_URL)).toHaveLength(0);
    // The page puts a plain object back: the next call starts its own run, whatever its loader URL.
    w().IGLOO = {};
    expect(await api.captureBlackbox({ loaderUrl: OTHER_LOADER })).toMatch(/^0400/);
    expect(scriptsFor(OTHER_LOADER)).toHaveLength(1);
  });

  it('a read-only window.IGLOO holding a plain object: invalid_option, and nothing is written', async () => {
    const held = {};
    Object.defineProperty(window, 'IGLOO', { value: held, writable: false, configurable: true });
    const error = await failure(api.captureBlackbox({ ...ok, globalName: 'IGLOO' }));
    expect(error.code).toBe('invalid_option');
    expect(held).toEqual({});
    expect(w().io_global_object_name).toBeUndefined();
    delete w().IGLOO;
    expect(await api.captureBlackbox({ loaderUrl: OTHER_LOADER })).toMatch(/^0400/);
  });

  it('the same holds with a globalName of its own: the name is not left behind', async () => {
    Object.defineProperty(window, 'CUSTOM_RISK', { value: Object.freeze({}), writable: true, configurable: true });
    expect((await failure(api.captureBlackbox({ ...ok, globalName: 'CUSTOM_RISK' }))).code).toBe('invalid_option');
    w().CUSTOM_RISK = {};
    expect(await api.captureBlackbox({ ...ok, globalName: 'CUSTOM_RISK' })).toMatch(/^0400/);
  });
});

describe('bbout_element_id naming an element without a value', () => {
  it.each([
    ['a <script>', 'script'],
    ['a <div>', 'div'],
  ])('%s: invalid_option at the first update, not a timeout, and the vendor flow goes on', async (_, tag) => {
    const element = document.createElement(tag);
    element.id = 'bbout';
    if (tag === 'script') (element as HTMLScriptElement).type = 'text/x-not-run';
    document.body.append(element);
    w().IGLOO = { bbout_element_id: 'bbout' };
    const started = performance.now();
    const error = await failure(api.captureBlackbox({ ...ok, timeoutMs: 20_000 }));
    expect(error.code).toBe('invalid_option');
    expect(error.message).toMatch(/"bbout_element_id".*an input or textarea/);
    // The blackbox the run produced travels with the error (never lost).
    expect(error.blackbox).toMatch(/^0400/);
    expect(performance.now() - started).toBeLessThan(10_000);
    // The page's other callers still get the blackbox: the run itself was not broken.
    delete w().IGLOO.bbout_element_id;
    expect(await api.captureBlackbox({ ...ok, onUpdate: () => {} })).toMatch(/^0400/);
  });

  it('an input under bbout_element_id is written, as before', async () => {
    const input = Object.assign(document.createElement('input'), { id: 'bbout' });
    document.body.append(input);
    w().IGLOO = { bbout_element_id: 'bbout' };
    expect(input.value).toBe('');
    const blackbox = await api.captureBlackbox(ok);
    expect(input.value).toBe(blackbox);
  });
});
