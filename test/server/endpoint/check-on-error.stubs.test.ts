// runDeviceRiskCheck's onError when it fails itself (src/server/errors.ts, safeOnError): the check's
// answer stays the same (check.ts), and nothing is left unhandled.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runDeviceRiskCheck } from '../../../src/server/index.js';
import { DeviceRiskError } from '../../../src/server/errors.js';
import { stubClient } from '../../support/stub-client.js';

const BLACKBOX = '0400' + 'nVQ+/abc'.repeat(150) + '==';
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
afterEach(() => vi.restoreAllMocks());

const hooks = {
  throws: () => {
    throw new Error('logger broke');
  },
  rejects: () => Promise.reject(new Error('sink down')),
};

async function run(onError: (e: unknown) => unknown, options: object, client = stubClient().client) {
  const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
  const unhandled: unknown[] = [];
  const onU = (r: unknown) => void unhandled.push(r);
  process.on('unhandledRejection', onU);
  let outcome: string;
  try {
    const result = await runDeviceRiskCheck(
      client,
      BLACKBOX,
      { customerInternalReference: 'c' },
      {
        workflowKey: 1,
        onError: onError as never,
        ...options,
      },
    );
    outcome = `resolved ${result.status}`;
  } catch (error) {
    outcome = `rejected ${String(error)}`;
  }
  await pause(30);
  process.off('unhandledRejection', onU);
  return { outcome, unhandled, logged: logged.mock.calls.map(([line]) => String(line)) };
}

describe('runDeviceRiskCheck with an onError that fails', () => {
  it.each(Object.entries(hooks))(
    'onResult throws, onError %s: the answer stays PROCESSED, nothing unhandled',
    async (_, onError) => {
      const r = await run(onError, {
        onResult: () => {
          throw new Error('shop decision code broke');
        },
      });
      expect(r.outcome).toBe('resolved PROCESSED');
      expect(r.unhandled).toEqual([]);
      expect(r.logged.join('\n')).toMatch(/logger broke|sink down/);
    },
  );

  it.each(Object.entries(hooks))(
    'result_not_ready, onError %s: the answer stays FINALIZED, nothing unhandled',
    async (_, onError) => {
      const { client } = stubClient({
        status: async () => {
          throw new DeviceRiskError('rate_limited', 'status answered 429', { status: 429, retryAfter: 1 });
        },
      });
      const r = await run(onError, { onResult: () => {} }, client);
      expect(r.outcome).toBe('resolved FINALIZED');
      expect(r.unhandled).toEqual([]);
      expect(r.logged.join('\n')).toMatch(/logger broke|sink down/);
    },
  );
});
