// The constants the sides share: the values the documents promise, and a module a bundler can
// inline (no import, no code but the literals).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as constants from '../../src/shared/constants.js';

describe('src/shared/constants.ts', () => {
  it("the first-party prefix is /iojs, as the docs and the vendor's loader documentation say", () => {
    expect(constants.DEFAULT_URI_HOOK).toBe('/iojs');
    expect(readFileSync(new URL('../../docs/proxy.md', import.meta.url), 'utf8')).toContain('/iojs');
  });

  it('holds only exported literals (strings, numbers, stateless patterns): nothing to run, nothing imported', () => {
    const code = readFileSync(new URL('../../src/shared/constants.ts', import.meta.url), 'utf8')
      .replace(/\/\*[\s\S]*?\*\/|\/\/.*/g, '')
      .trim()
      .split('\n')
      .filter(Boolean);
    expect(code.length).toBeGreaterThan(0);
    // A string, a number, or a regular expression without the flags that give it state (g, y).
    for (const line of code) expect(line).toMatch(/^export const [A-Z_]+ = ('[^']*'|\d+|\/\^.*\$\/[imsu]*);$/);
    for (const value of Object.values(constants)) {
      if (value instanceof RegExp) expect(value.global || value.sticky).toBe(false);
      else expect(['string', 'number']).toContain(typeof value);
    }
  });
});
