// @vitest-environment happy-dom
// The failed-script check on its own (the chunk capture.ts loads when a script fails): which
// first-party collection script did not parse, and the degraded grace it starts. capture-guards
// and outcomes.test.ts run it through a capture.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { judge, unparsedScript, type Run } from '../../src/browser/unparsed.js';
import { explain, fault, type BlackboxCaptureError } from '../../src/browser/errors.js';
import type { NormalizedOptions } from '../../src/browser/options.js';

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

describe('judge: what the failed scripts mean for the run; a grace ends only its own run', () => {
  /** A run whose first party failed (an unparsed script) and whose third party delivered `latest`. */
  const runOf = (latest: string, accept: Run[6]): Run => [
    { uri_hook: '/iojs' },
    ['fp_static_wdp'],
    latest,
    false,
    { degradedGraceMs: 20 } as NormalizedOptions,
    () => {},
    accept,
    fault,
  ];

  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('the same run, when the grace is up: its latest blackbox, as final', () => {
    const accept = vi.fn();
    const run = runOf('bb-partial', accept);
    judge(() => run);
    vi.advanceTimersByTime(19);
    expect(accept).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(accept.mock.calls).toEqual([['bb-partial', true]]);
  });

  it('a run that ended, and another that started before the grace was up: nothing', () => {
    const first = vi.fn();
    let current = runOf('bb-first', first);
    judge(() => current);
    // The first run failed, and a new one (its own unparsed list) has a partial blackbox of its own.
    const second = vi.fn();
    current = runOf('bb-second', second);
    // The new run's own grace, started later, is the one that may end it.
    vi.advanceTimersByTime(20);
    expect(first).not.toHaveBeenCalled();
    expect(second).not.toHaveBeenCalled();
  });

  it('a configuration that starts no chain (both lists off) is neither failed nor graced: nothing failed', () => {
    const fail = vi.fn();
    const accept = vi.fn();
    const run: Run = [{ fp_static: 'false', tp: '0' }, [], 'bb', false, {} as NormalizedOptions, fail, accept, fault];
    judge(() => run);
    vi.runAllTimers();
    expect([fail.mock.calls, accept.mock.calls]).toEqual([[], []]);
  });

  it('every chain the configuration starts has failed: collection_failed at once, naming the scripts', async () => {
    const fail = vi.fn();
    // The first party off: the third party is the only chain, and it failed.
    const run: Run = [
      { fp_static: 'false', uri_hook: '/iojs', io_wdp_load_failure: '1' },
      [],
      'bb',
      false,
      {} as NormalizedOptions,
      fail,
      vi.fn(),
      fault,
    ];
    judge(() => run);
    expect(fail).toHaveBeenCalledTimes(1);
    const error = (await explain(fail.mock.calls[0]![0])) as BlackboxCaptureError;
    expect([error.code, error.scripts, error.blackbox]).toEqual(['collection_failed', ['io_wdp'], 'bb']);
    expect(error.message).toContain('third-party wdp.js. Third party: an ad blocker');
  });
});
