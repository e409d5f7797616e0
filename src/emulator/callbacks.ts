/**
 * The emulated service's status callbacks: each one sent to the account's `callbackUrl`,
 * retried on non-2xx and network errors with a doubling wait (the vendor's retry policy is
 * not documented: docs/vendor-contract.md#the-answer; this one is fixed so that tests can
 * count its attempts), and sent twice, late or not at all as a test asks.
 */
import type { CallbackFaults, SentCallback } from './index.js';

/** Callback deliveries tried at most, and the first wait between them (doubled each time). */
const CALLBACK_ATTEMPTS = 5;
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
    // Retried on non-2xx and network errors, with backoff, as the service does.
    for (let attempt = 1; attempt <= CALLBACK_ATTEMPTS; attempt++) {
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
      if (attempt < CALLBACK_ATTEMPTS)
        await new Promise((resolve) => setTimeout(resolve, CALLBACK_BACKOFF_MS * 2 ** (attempt - 1)));
    }
    record.delivered = false;
  };
}
