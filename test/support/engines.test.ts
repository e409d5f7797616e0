// Which browser engines the engine specs run in: every one installed, and under CI all three
// or a clear failure (a missing engine must not pass as a skipped one).
import { describe, expect, it } from 'vitest';
import { availableEngines } from './engines.mjs';

const installed = {
  CHROMIUM_PATH: process.execPath,
  FIREFOX_PATH: process.execPath,
  WEBKIT_DRIVER_PATH: process.execPath,
  MINIBROWSER_PATH: process.execPath,
  XVFB_PATH: process.execPath,
};

describe('availableEngines', () => {
  it('lists every engine whose programs exist', () => {
    expect(availableEngines(installed)).toEqual(['chromium', 'firefox', 'webkit']);
  });

  it('leaves out a missing one outside CI; WebKit needs its driver, MiniBrowser and Xvfb', () => {
    expect(availableEngines({ ...installed, FIREFOX_PATH: '/nonexistent/firefox' })).toEqual(['chromium', 'webkit']);
    expect(availableEngines({ ...installed, XVFB_PATH: '/nonexistent/Xvfb' })).toEqual(['chromium', 'firefox']);
    expect(availableEngines({ ...installed, MINIBROWSER_PATH: '/nonexistent/MiniBrowser' })).toEqual([
      'chromium',
      'firefox',
    ]);
  });

  it('with CI set, a missing engine is an error that names it and what installs it', () => {
    expect(() => availableEngines({ ...installed, CI: 'true', WEBKIT_DRIVER_PATH: '/nonexistent/driver' })).toThrow(
      /CI is set and a browser engine is missing: webkit \(\.ci\/run installs .*webkit2gtk-driver/,
    );
    expect(availableEngines({ ...installed, CI: 'true' })).toHaveLength(3);
  });
});
