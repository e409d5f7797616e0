import { describe, expect, it } from 'vitest';
import { decisionLabel, engineOf } from '../../../src/server/status/engine.js';

describe('engineOf', () => {
  it.each([
    ['Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0', 'firefox'],
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36', 'chromium'],
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 HeadlessChrome/130.0 Safari/537.36', 'chromium'],
    ['Mozilla/5.0 (Macintosh) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15', 'webkit'],
    ['Mozilla/5.0 (iPhone) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/130.0 Mobile/15E148', 'webkit'],
    ['curl/8.5.0', 'other'],
    [null, 'other'],
  ])('%s is %s', (agent, engine) => {
    expect(engineOf(agent)).toBe(engine);
  });

  it('keeps decision labels to the documented types', () => {
    expect(decisionLabel('REJECTED')).toBe('REJECTED');
    expect(decisionLabel('<script>')).toBe('other');
  });
});
