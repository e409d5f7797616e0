// A checkout the endpoint accepted (202 with its reference) is checked in the background:
// the transaction it made, found in the emulator once the queue has uploaded its blackbox and finalized it.
import type { Emulator, TransactionView } from '../../src/emulator/index.js';

/** The first transaction made after the `before`th with a blackbox and finalized; waits for it up to `timeoutMs`. */
export async function checkedTransaction(
  emulator: Pick<Emulator, 'inspect'>,
  before: number,
  timeoutMs = 20_000,
): Promise<TransactionView> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const made = emulator.inspect
      .transactions()
      .slice(before)
      // Finalized: a callback the test sends for it says PROCESSED, as the service's would only then.
      .find((tx) => tx.blackboxes.length > 0 && tx.status === 'PROCESSED');
    if (made) return made;
    if (Date.now() > end) throw new Error(`no transaction was checked within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
