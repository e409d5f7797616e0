// What the emulator command reads from its environment (src/emulator/cli-env.ts): the port
// base in decimal digits, and values that print as one line of --env each. The command itself
// is run in test/package/emulator.test.ts.
import { describe, expect, it } from 'vitest';
import { lineSafe, parseLimits, parsePortBase } from '../../src/emulator/cli-env.js';

describe('parsePortBase', () => {
  it.each([
    ['1', 1],
    ['4300', 4300],
    ['04300', 4300],
    ['65529', 65529],
  ])('%j is %d', (text, base) => {
    expect(parsePortBase(text)).toEqual({ base });
  });

  it.each(['1e3', '0x10C0', ' 4300 ', '4300 ', '+4300', '4300.0', '-1', '', '4_300', '٤٣٠٠'])(
    '%j is refused: decimal digits only, named as written',
    (text) => {
      expect(parsePortBase(text)).toEqual({
        error: `EMULATOR_PORT_BASE must be written in decimal digits only (got ${JSON.stringify(text)})`,
      });
    },
  );

  it.each(['0', '65530', '99999999999999999999'])('%j is refused: out of range', (text) => {
    expect(parsePortBase(text)).toEqual({
      error: `EMULATOR_PORT_BASE must be a port number, at most 65529 (got ${text})`,
    });
  });
});

describe('lineSafe', () => {
  it.each(['emulator-secret', 's3cr3t with spaces', 'ünïcödé', 'a=b', ''])('%j prints as one line', (value) => {
    expect(lineSafe('CLIENT_SECRET', value)).toBeUndefined();
  });

  it.each(['a\nb', 'a\rb', 'a\tb', '\u0000', '\u001f', '\u007f', '\u0085', '\u009f', 'a\u2028b', 'a\u2029b'])(
    '%j is refused, naming the variable and not the value',
    (value) => {
      expect(lineSafe('CLIENT_SECRET', value)).toBe('CLIENT_SECRET must not contain control characters or line breaks');
    },
  );

  it.each(['\u0020', '\u00a0', '\u2027', '\u202a'])('%j, next to the refused ranges, prints', (value) => {
    expect(lineSafe('X', value)).toBeUndefined();
  });
});

describe('parseLimits (EMULATOR_LIMITS)', () => {
  it.each([
    [undefined, true],
    ['', true],
    ['on', true],
    ['off', false],
  ])('%j keeps the limits: %s', (text, limits) => {
    expect(parseLimits(text)).toEqual({ limits });
  });

  it.each(['OFF', '0', 'false', ' off'])('%j is refused, named as written', (text) => {
    expect(parseLimits(text)).toEqual({ error: `EMULATOR_LIMITS must be on or off (got ${JSON.stringify(text)})` });
  });
});
