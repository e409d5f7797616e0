// What the tests of the callback handler's parts share: a documented body, a stub client and
// settings made the way the handler makes them.
import type { DeviceRiskClient } from '../../src/server/index.js';
import { callbackSettings, type CallbackSettings } from '../../src/server/callbacks/settings.js';
import type { CallbackHandlerOptions } from '../../src/server/callbacks/types.js';

export const RETRIEVAL = 'https://retrieval.test';
export const ACCOUNT = '11111111-2222-4333-8444-555555555555';
export const EXECUTION = '66666666-7777-4888-9999-aaaaaaaaaaaa';

/** A callback of the documented shape, for ACCOUNT and EXECUTION, PROCESSED. */
export const callbackBody = (execution: Record<string, unknown> = {}) => ({
  callbackSentAt: '2026-11-23T10:00:00.000Z',
  userReference: 'user-1',
  workflowExecution: {
    id: EXECUTION,
    href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}/workflow-executions/${EXECUTION}`,
    definitionKey: 10020,
    status: 'PROCESSED' as const,
    ...execution,
  },
  account: { id: ACCOUNT, href: `${RETRIEVAL}/api/v1/accounts/${ACCOUNT}` },
});

/** A client whose reads answer at once; `details` may be replaced. */
export const stubClient = (changes: Partial<DeviceRiskClient> = {}): DeviceRiskClient =>
  ({
    retrievalOrigin: RETRIEVAL,
    clientId: 'client-1',
    details: async () => ({ status: 'PROCESSED' }),
    status: async () => 'PROCESSED',
    ...changes,
  }) as unknown as DeviceRiskClient;

/** Settings as the handler makes them, on a stub client, every source allowed. */
export const settingsFor = (options: Partial<CallbackHandlerOptions> = {}): CallbackSettings =>
  callbackSettings({ client: stubClient(), allowedSources: 'any', onResult: () => {}, ...options });
