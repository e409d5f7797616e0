// The default queue's data directory holds the keys beside the checkouts: a check whose try
// failed, taken by the next process on the directory (a deploy), resumes from its key's record
// there, never making a second transaction for its order (another process running on the
// directory takes it the same way).
import { describe, expect, it } from 'vitest';
import type { DeviceRiskHandler } from '../../../src/server/index.js';
import { checkoutFor, handlerOn, useEmulators } from '../../support/kit.js';

const emulatorFor = useEmulators();

/** A handler on the default queue in this test's data directory; what it decides and tells, into `said`. */
function onDataDir(emulator: Awaited<ReturnType<typeof emulatorFor>>, name: string, said: string[]): DeviceRiskHandler {
  return handlerOn(emulator, {
    answer: 'accepted',
    reportStatus: false,
    checkoutsPerAddress: false,
    checkoutsPerCustomer: false,
    client: { sleep: async () => {}, tokenSource: { sleep: async () => {} } },
    resolveCustomer: (request: Request) => ({ customerInternalReference: request.headers.get('x-order')! }),
    onResult: (_details, { customerInternalReference }) =>
      void said.push(`${name} decided ${customerInternalReference}`),
    onError: (error) => void said.push(`${name} error ${(error as { code?: string }).code}`),
  });
}

async function until(done: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error('not within time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("the default queue's keys, in its data directory", () => {
  it.each([
    ['its upload refused', 'upload'],
    ['its decision not read', 'status'],
  ] as const)(
    'a check whose try failed (%s), resumed by the next process after a deploy: one transaction',
    async (_, fault) => {
      const emulator = await emulatorFor();
      const said: string[] = [];
      const first = onDataDir(emulator, 'first', said);
      emulator.faults.fail(fault, { status: 503, times: 1000 });
      expect((await first(checkoutFor('key-deploy-1', { order: 'order-1' }))).status).toBe(202);
      await until(() => said.some((line) => line.startsWith('first error')));
      emulator.faults.clear();
      // The deploy: this process ends, the next opens the same directory.
      await first.close();
      const next = onDataDir(emulator, 'next', said);
      try {
        await until(() => said.includes('next decided order-1'));
      } finally {
        await next.close();
      }
      const transactions = emulator.inspect.transactions();
      expect(transactions.map((t) => [t.customerInternalReference, t.blackboxes.length])).toEqual([['order-1', 1]]);
      expect(said.filter((line) => line.includes('decided'))).toEqual(['next decided order-1']);
    },
  );
});
