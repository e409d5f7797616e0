// The csp check on its own (src/doctor/checks/csp.ts): which directive governs the loader, the
// first-party scripts and the vendor host; 'strict-dynamic' and its nonce; each policy on its own;
// the problems named, and the fix naming the origins it knows.
import { describe, expect, it } from 'vitest';
import { allows, checkCsp } from '../../../src/doctor/checks/csp.js';
import { findLoaders } from '../../../src/doctor/checks/loader.js';
import { recorder } from '../../support/doctor-checks.js';

const PAGE = new URL('https://shop.test/checkout');
const VENDOR = 'https://mpsnare.iesnare.com';
const LOADER_TAG = '<script src="https://cdn.vendor.test/loader_only.js"></script>';

function csp(policy: string | undefined, html = LOADER_TAG, metaPolicies: string[] = []) {
  const { add, findings } = recorder();
  const meta = metaPolicies.map((p) => `<meta http-equiv="Content-Security-Policy" content="${p}">`).join('');
  checkCsp(add, {
    page: PAGE,
    prefix: '/iojs',
    thirdParty: VENDOR,
    pageHeaders: new Headers(policy === undefined ? {} : { 'content-security-policy': policy }),
    loaders: findLoaders(meta + html, PAGE, undefined),
  });
  expect(findings).toHaveLength(1);
  expect(findings[0]!.id).toBe('csp');
  return findings[0]!;
}

const ALL = `'self' https://cdn.vendor.test ${VENDOR}`;

describe('checkCsp', () => {
  it('no policy passes: nothing blocks the loader', () => {
    expect(csp(undefined)).toMatchObject({
      status: 'pass',
      message: 'no Content-Security-Policy: nothing blocks the loader',
    });
  });

  it('a policy allowing the loader, this origin and the vendor, for scripts and connections, passes', () => {
    expect(csp(`script-src ${ALL}; connect-src 'self' ${VENDOR}`)).toMatchObject({ status: 'pass', fix: undefined });
    // default-src governs both where the others are missing.
    expect(csp(`default-src ${ALL}`).status).toBe('pass');
    expect(csp(`default-src 'self' ${VENDOR}`).message).toBe(
      "script-src does not allow the loader's origin https://cdn.vendor.test",
    );
    expect(csp(`default-src https://cdn.vendor.test 'self'`).message).toBe(
      `script-src does not allow the vendor's host ${VENDOR}; connect-src does not allow the vendor's host ${VENDOR}`,
    );
  });

  it('each missing source is named, scripts then connections, joined by "; "', () => {
    expect(csp(`script-src 'none'; connect-src 'self'`).message).toBe(
      "script-src does not allow the loader's origin https://cdn.vendor.test; " +
        'script-src does not allow this origin, where /iojs/ serves the first-party scripts; ' +
        `script-src does not allow the vendor's host ${VENDOR}; ` +
        `connect-src does not allow the vendor's host ${VENDOR}`,
    );
    expect(csp(`script-src 'self' ${VENDOR}; connect-src ${VENDOR}`).message).toBe(
      "script-src does not allow the loader's origin https://cdn.vendor.test",
    );
    expect(csp(`script-src https://cdn.vendor.test ${VENDOR}; connect-src ${VENDOR}`).message).toBe(
      'script-src does not allow this origin, where /iojs/ serves the first-party scripts',
    );
    expect(csp(`script-src 'self' https://cdn.vendor.test; connect-src ${VENDOR}`).message).toBe(
      `script-src does not allow the vendor's host ${VENDOR}`,
    );
  });

  it('script-src-elem governs scripts before script-src, and script-src before default-src', () => {
    expect(csp(`script-src-elem ${ALL}; script-src 'none'; default-src ${VENDOR}`).status).toBe('pass');
    expect(csp(`script-src ${ALL}; default-src ${VENDOR}`).status).toBe('pass');
    expect(csp(`script-src-elem 'none'; script-src ${ALL}; connect-src ${VENDOR}`).status).toBe('fail');
  });

  it('connect-src governs connections before default-src', () => {
    expect(csp(`script-src ${ALL}; connect-src ${VENDOR}; default-src 'none'`).status).toBe('pass');
    expect(csp(`script-src ${ALL}; connect-src 'self'; default-src ${VENDOR}`).message).toBe(
      `connect-src does not allow the vendor's host ${VENDOR}`,
    );
    // Neither: connections are not restricted.
    expect(csp(`script-src ${ALL}`).status).toBe('pass');
    // No script directive at all: only connections are checked.
    expect(csp(`connect-src 'self'`).message).toBe(`connect-src does not allow the vendor's host ${VENDOR}`);
  });

  it("'strict-dynamic' needs a page script carrying one of its nonces; the listed sources do not count then", () => {
    const nonced = `<script nonce="r4nd0m" src="/app.js"></script>${LOADER_TAG}`;
    expect(csp(`script-src 'strict-dynamic' 'nonce-r4nd0m'; connect-src ${VENDOR}`, nonced).status).toBe('pass');
    expect(csp(`script-src 'STRICT-DYNAMIC' 'NONCE-r4nd0m'; connect-src ${VENDOR}`, nonced).status).toBe('pass');
    const unnonced = csp(`script-src 'strict-dynamic' 'nonce-other' ${ALL}; connect-src ${VENDOR}`, nonced);
    expect(unnonced.status).toBe('fail');
    expect(unnonced.message).toBe(
      "script-src has 'strict-dynamic' but no page script carries its nonce: nothing can load the loader",
    );
    // A tag without a nonce does not match a policy's nonce, however it is spelt.
    expect(csp(`script-src 'strict-dynamic' 'nonce-'; connect-src ${VENDOR}`, LOADER_TAG).status).toBe('fail');
  });

  it('every policy must allow: a header and a meta policy each', () => {
    const good = `script-src ${ALL}; connect-src ${VENDOR}`;
    expect(csp(good, LOADER_TAG, [good]).status).toBe('pass');
    expect(csp(good, LOADER_TAG, [`connect-src 'self'`]).message).toBe(
      `connect-src does not allow the vendor's host ${VENDOR}`,
    );
    expect(csp(undefined, LOADER_TAG, [`connect-src 'self'`]).status).toBe('fail');
    expect(csp(`${good}, connect-src 'none'`).status).toBe('fail');
  });

  it("the fix names the loader's origins, each once, without this origin", () => {
    const html = `${LOADER_TAG}<script src="https://cdn.vendor.test/snare.js"></script><script src="/loader.js"></script>`;
    expect(csp(`script-src 'none'`, html).fix).toBe(
      `allow them: script-src 'self' https://cdn.vendor.test ${VENDOR} (or a nonce with 'strict-dynamic' on the tag that loads the package), connect-src 'self' ${VENDOR}`,
    );
    const two = `${LOADER_TAG}<script src="https://other.vendor.test/snare.js"></script>`;
    expect(csp(`script-src 'none'`, two).fix).toContain(
      `script-src 'self' https://cdn.vendor.test https://other.vendor.test ${VENDOR} (`,
    );
    expect(csp(`script-src 'none'`, '').fix).toContain(`script-src 'self' <loader origin> ${VENDOR}`);
  });
});

describe('allows: a scheme in the source', () => {
  it.each([
    ['http://x.test', 'http://x.test', true],
    ['https://x.test', 'https://x.test', true],
    ['http://x.test', 'https://x.test', true],
    ['https://x.test', 'http://x.test', false],
  ])('%s lets %s load: %s', (source, origin, allowed) => {
    expect(allows([source], origin, 'https://shop.test')).toBe(allowed);
  });
});
