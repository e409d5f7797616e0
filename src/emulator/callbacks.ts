/**
 * The emulated service's status callbacks: each one sent ONCE to the account's `callbackUrl`,
 * as the service documents no resend (docs/vendor-contract.md#the-answer): a callback answered
 * non-2xx, or lost on the network, is not sent again, and the decision has to reach the shop
 * through retrieval. A test can still ask for resends (`resend: n`: up to n more attempts,
 * with a doubling wait, so that tests can count them), and for copies sent twice, late or not
 * at all.
 */
import type { CallbackFaults, SentCallback } from './index.js';

/** The first wait before an injected resend (doubled before each next one). */
const CALLBACK_BACKOFF_MS = 200;

export function createCallbackSender(
  doFetch: typeof fetch,
  currentFaults: () => CallbackFaults,
  callbacks: SentCallback[],
): (url: string, body: unknown) => Promise<void> {
  return async function sendCallback(url, body) {
    const record: SentCallback = { url, body, attempts: 0 };
    callbacks.push(record);
    const faults = { ...currentFaults() };
    if (faults.drop) return void (record.delivered = false);
    if (faults.delayMs) await new Promise((resolve) => setTimeout(resolve, faults.delayMs));
    // Once, unless a test injected resends.
    const attempts = 1 + Math.max(0, Math.floor(faults.resend ?? 0));
    for (let attempt = 1; attempt <= attempts; attempt++) {
      record.attempts = attempt;
      // A timer held here, not AbortSignal.timeout(): that one can be collected before it fires.
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 10_000);
      try {
        const response = await doFetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'blackbox-capture-emulator/1' },
          body: JSON.stringify(body),
          redirect: 'manual',
          signal: controller.signal,
        });
        record.status = response.status;
        delete record.error;
        await response.body?.cancel();
        if (response.ok) {
          record.delivered = true;
          if (faults.duplicate)
            void doFetch(url, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'user-agent': 'blackbox-capture-emulator/1' },
              body: JSON.stringify(body),
            }).then(
              (r) => r.body?.cancel(),
              () => {},
            );
          return;
        }
      } catch (error) {
        record.error = (error as Error).message;
      } finally {
        clearTimeout(timer);
      }
      if (attempt < attempts)
        await new Promise((resolve) => setTimeout(resolve, CALLBACK_BACKOFF_MS * 2 ** (attempt - 1)));
    }
    record.delivered = false;
  };
}
