// errors.ts and messages.ts: fault() records the facts of a message, typed against the
// message it fills; explain() writes the message from them.
import { describe, expect, it } from 'vitest';
import { explain, fault } from '../../src/browser/errors.js';
import { MESSAGES } from '../../src/browser/messages.js';

describe('fault() and explain()', () => {
  it('writes the message of the kind named, from the arguments recorded', async () => {
    const error = await explain(fault('invalid_option', ['post.url', ['url']], {}, 'unknown_option'));
    expect(error).toMatchObject({
      code: 'invalid_option',
      message: '[blackbox-capture] Unknown option "post.url"; known: url.',
    });
  });

  it('a code without arguments is its own kind', async () => {
    expect(await explain(fault('aborted'))).toMatchObject({ message: '[blackbox-capture] Aborted.' });
  });

  it("checks a message's arguments when the code is written (typecheck)", () => {
    // Never called: `npm run typecheck` fails if one of these stops being an error.
    const unchecked = () => {
      // @ts-expect-error timeout takes four arguments
      fault('timeout', [1000]);
      // @ts-expect-error loader_failed takes the URL and whether it ran
      fault('loader_failed');
      // @ts-expect-error unknown_option takes the known names as a list
      fault('invalid_option', ['a', 'b'], {}, 'unknown_option');
      // @ts-expect-error a kind that has no message
      fault('invalid_option', [], {}, 'no_such_kind');
    };
    expect(typeof unchecked).toBe('function');
    expect(Object.keys(MESSAGES)).toContain('unknown_option');
  });
});
