// The shoppers' retries of the benches and the peak test, held to the browser package's
// (src/browser/deliver.ts): what is tried again, how long it waits, when it stops.
import { describe, expect, it } from 'vitest';
import { withBrowserRetries } from './browser-retries.mjs';

const answer = (status: number, headers: Record<string, string> = {}) => new Response('{}', { status, headers });
/** `send` answering each of `answers` in turn (an Error: a network error), and the waits asked for. */
function scripted(...answers: (Response | Error)[]) {
  const waits: number[] = [];
  const send = async (attempt: number) => {
    const next = answers[attempt - 1]!;
    if (next instanceof Error) throw next;
    return next;
  };
  return { send, waits, sleep: async (ms: number) => void waits.push(ms) };
}

describe('withBrowserRetries', () => {
  it.each([409, 429, 500, 503])('tries a %i again after its Retry-After', async (status) => {
    const { send, waits, sleep } = scripted(answer(status, { 'retry-after': '3' }), answer(202));
    const { response, attempts } = await withBrowserRetries(send, { sleep });
    expect([response.status, attempts, waits]).toEqual([202, 2, [3000]]);
  });

  it('takes another 4xx as it is', async () => {
    const { send, waits, sleep } = scripted(answer(400), answer(202));
    expect((await withBrowserRetries(send, { sleep })).response.status).toBe(400);
    expect(waits).toEqual([]);
  });

  it('stops at an answer the caller takes as final', async () => {
    const { send, sleep } = scripted(answer(503), answer(202));
    const { response, attempts } = await withBrowserRetries(send, { sleep, final: (r) => r.status === 503 });
    expect([response.status, attempts]).toEqual([503, 1]);
  });

  it('tries a network error again, backing off without a Retry-After, and gives the last answer after 4', async () => {
    const { send, waits, sleep } = scripted(new Error('reset'), answer(503), answer(503), answer(503), answer(202));
    const { response, attempts } = await withBrowserRetries(send, { sleep });
    expect([response.status, attempts]).toEqual([503, 4]);
    waits.forEach((ms, i) => expect(ms).toBeLessThanOrEqual(300 * 2 ** (i + 1)));
    expect(waits).toHaveLength(3);
  });

  it('rejects with the fourth network error, and never waits over 20 s', async () => {
    const { send, waits, sleep } = scripted(answer(503, { 'retry-after': '60' }), ...Array(3).fill(new Error('down')));
    await expect(withBrowserRetries(send, { sleep })).rejects.toThrow('down');
    expect(waits[0]).toBe(20_000);
  });
});
