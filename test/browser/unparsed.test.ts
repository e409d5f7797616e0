// @vitest-environment happy-dom
// The failed-script check on its own (the chunk capture.ts loads when a script fails): which
// first-party collection script did not parse. capture-guards.test.ts runs it through a capture.
import { describe, expect, it } from 'vitest';
import { unparsedScript } from '../../src/browser/unparsed.js';

const origin = location.origin;
const parseError = (filename: string, error: Error = new SyntaxError("Unexpected token '<'")) =>
  new ErrorEvent('error', { filename, error });

describe('unparsedScript', () => {
  const loader = { uri_hook: '/iojs', fp_static_override_uri: '/static/fp_static.js' };

  it.each([
    [
      'a script under the proxy path, with a query',
      `${origin}/iojs/general5/static_wdp.js?loaderVer=5.2.2`,
      'fp_static_wdp',
    ],
    ['the dynamic script', `${origin}/iojs/general5/dyn_wdp.js`, 'fp_dyn_wdp'],
    ['the static override', `${origin}/static/fp_static.js?x=1`, 'fp_fp_static'],
    ["a script of the page's own", `${origin}/app/main.js`, ''],
    ['a path that only starts like the proxy path', `${origin}/iojsx/static_wdp.js`, ''],
    ['another origin under the same path', 'https://elsewhere.example/iojs/general5/static_wdp.js', ''],
  ])('a parse error in %s: %j', (_, filename, name) => {
    expect(unparsedScript(parseError(filename), loader)).toBe(name);
  });

  it('another error than a parse error, or an element error event without a file, names nothing', () => {
    expect(unparsedScript(parseError(`${origin}/iojs/general5/static_wdp.js`, new TypeError('x')), loader)).toBe('');
    expect(unparsedScript(new Event('error'), loader)).toBe('');
  });
});
