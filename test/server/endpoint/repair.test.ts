// Blackboxes damaged on their way by the integrator's own form and URL code: repaired where
// the repair is lossless, refused as blackbox_damaged with the cause where not.
import { describe, expect, it } from 'vitest';
import { repairBlackbox } from '../../../src/server/index.js';
import { startDemo } from '../../../demo/app.js';
import { configFromEnvironment } from '../../../demo/config.js';

const BLACKBOX = '0400' + 'nVQ+/abc@'.repeat(50) + '+x==';

describe('repairBlackbox', () => {
  it('an intact blackbox passes as it is, with no repair', () => {
    expect(repairBlackbox(BLACKBOX)).toEqual({ blackbox: BLACKBOX, repairs: [] });
  });

  it.each([
    ['spaces where "+" was (form decoding)', BLACKBOX.replace(/\+/g, ' '), ['spaces_for_plus']],
    ['percent-encoding (%2B, %2F, %3D, %40)', encodeURIComponent(BLACKBOX), ['percent_encoding']],
    [
      'percent-encoding in lower case',
      encodeURIComponent(BLACKBOX).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
      ['percent_encoding'],
    ],
    [
      'line breaks from wrapping (CRLF and LF)',
      BLACKBOX.slice(0, 76) + '\r\n' + BLACKBOX.slice(76, 152) + '\n' + BLACKBOX.slice(152),
      ['line_breaks'],
    ],
    ['surrounding double quotes', `"${BLACKBOX}"`, ['quotes']],
    ['surrounding single quotes with spaces around', ` '${BLACKBOX}' `, ['quotes']],
    [
      'quotes, wrapping and form decoding at once',
      `"${BLACKBOX.slice(0, 60)}\n${BLACKBOX.slice(60).replace(/\+/g, ' ')}"`,
      ['quotes', 'line_breaks', 'spaces_for_plus'],
    ],
  ])('repairs %s, losslessly', (_, damaged, repairs) => {
    const repaired = repairBlackbox(damaged);
    expect(repaired.repairs).toEqual(repairs);
    expect(repaired.blackbox).toBe(BLACKBOX);
  });

  it.each([
    ['a broken percent escape', BLACKBOX.slice(0, 20) + '%2', /percent-encoded, and its encoding is broken/],
    [
      'characters no repair explains',
      BLACKBOX.replace('abc', 'a<c').replace('+', ' '),
      /spaces_for_plus.*not a blackbox/,
    ],
    ['a percent-decoded value outside the alphabet', BLACKBOX + '%3C', /percent_encoding.*not a blackbox/],
    ['a repaired value over the length limit', ' ' + 'A'.repeat(8001), /spaces_for_plus.*longer than/],
  ])('refuses %s as blackbox_damaged, naming the cause', (_, damaged, message) => {
    expect(() => repairBlackbox(damaged)).toThrow(
      expect.objectContaining({ code: 'blackbox_damaged', message: expect.stringMatching(message) }),
    );
  });

  it.each([
    ['not a string', 42],
    ['empty', ''],
    ['a value with neither damage nor alphabet', 'abc<def'],
    ['a value far too long to be worth repairing', ' '.repeat(30_000)],
  ])('refuses %s as invalid_blackbox, with no repair attempted', (_, value) => {
    expect(() => repairBlackbox(value)).toThrow(expect.objectContaining({ code: 'invalid_blackbox' }));
  });
});

describe('repairBlackbox, at its edges', () => {
  it('an object whose text is a quoted blackbox is no blackbox: invalid_blackbox, nothing repaired', () => {
    const disguised = { toString: () => `"${BLACKBOX}"` };
    expect(() => repairBlackbox(disguised)).toThrow(expect.objectContaining({ code: 'invalid_blackbox' }));
  });

  it('the longest damage that can stand for a blackbox of the longest length is repaired', () => {
    const damaged = `"${'%2B'.repeat(8001)}"`;
    expect(damaged).toHaveLength(3 * 8001 + 2);
    expect(repairBlackbox(damaged)).toEqual({ blackbox: '+'.repeat(8001), repairs: ['quotes', 'percent_encoding'] });
    expect(() => repairBlackbox(`${damaged} `)).toThrow(expect.objectContaining({ code: 'invalid_blackbox' }));
  });

  it.each([
    ['quotes inside it', `AAAA"${BLACKBOX}"`],
    ['a quoted part at its start', `"AAAA"${BLACKBOX}`],
  ])('only quotes around the whole value are taken off: one with %s is refused, nothing taken off', (_, damaged) => {
    expect(() => repairBlackbox(damaged)).toThrow(expect.objectContaining({ code: 'invalid_blackbox' }));
  });

  it("a refusal names what is still wrong once, with the check's own error as its cause", () => {
    let refusal: (Error & { code?: string; cause?: unknown }) | undefined;
    try {
      repairBlackbox(BLACKBOX.replace('abc', 'a<c').replace('+', ' '));
    } catch (error) {
      refusal = error as typeof refusal;
    }
    expect(refusal).toMatchObject({
      code: 'blackbox_damaged',
      cause: expect.objectContaining({ code: 'invalid_blackbox' }),
    });
    expect(refusal!.message.match(/\[blackbox-capture\/server\]/g)).toHaveLength(1);
    expect(refusal!.message).toContain((refusal!.cause as Error).message.replace('[blackbox-capture/server] ', ''));
  });
});

describe("the demo's classic form post", () => {
  it('survives a form that sends the field unencoded ("+" arrives as a space)', async () => {
    const demo = await startDemo({ ...configFromEnvironment({}), port: 0 });
    try {
      const response = await fetch(`${demo.url}/checkout`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: demo.url },
        body: `blackbox=${BLACKBOX}&blackbox_outcome=complete`, // not encoded: "+" reads as a space
      });
      const page = await response.text();
      expect(page).toContain('Server result');
      expect(page).toContain(`&#34;blackboxLength&#34;: ${BLACKBOX.length}`);
    } finally {
      await demo.close();
    }
  });
});
