// A checkout's post tried again as the browser package tries it (src/browser/deliver.ts): a
// network error, 409, 429 or a 5xx again, up to 4 tries, after the answer's Retry-After or a
// jittered back-off, never waiting over 20 s. For the benches and tests that stand for shoppers.

/**
 * `send(attempt)` posts once (a Response, or a rejection for a network error). `final(response)`
 * ends the tries early on an answer the caller takes as it is (the default: none). Resolves
 * with the last answer and the tries it took; rejects with the last network error.
 */
export async function withBrowserRetries(
  send,
  { final = () => false, maxAttempts = 4, sleep = (ms) => new Promise((r) => setTimeout(r, ms)) } = {},
) {
  for (let attempt = 1; ; attempt++) {
    let response;
    try {
      response = await send(attempt);
    } catch (error) {
      if (attempt >= maxAttempts) throw error;
    }
    if (response) {
      const retried = response.status === 409 || response.status === 429 || response.status >= 500;
      if (response.ok || !retried || attempt >= maxAttempts || (await final(response)))
        return { response, attempts: attempt };
    }
    const wait = Number(response?.headers.get('retry-after') ?? NaN);
    await sleep(Math.min(20_000, wait >= 0 ? wait * 1000 : Math.random() * 300 * 2 ** attempt));
  }
}
