// The service's identifiers and addresses in their documented shapes
// (docs/vendor-contract.md#the-service), for the stub APIs of the Device Risk client's tests.
import { DeviceRiskTransaction } from '../../src/server/api/transaction.js';

export const UA = 'AcmeShop Checkout/1.0';
export const BASE = 'https://api.example';
export const ACCOUNT = '11111111-2222-4333-8444-555555555555';
export const EXECUTION = '66666666-7777-4888-9999-aaaaaaaaaaaa';
export const CREDENTIAL = 'bbbbbbbb-cccc-4ddd-8eee-ffffffffffff';
export const EXECUTION_URL = `${BASE}/api/v1/accounts/${ACCOUNT}/workflow-executions/${EXECUTION}`;
export const PART_URL = `${EXECUTION_URL}/credentials/${CREDENTIAL}/parts/DEVICE_RISK`;
/** A fixed "now" (2027-01-15), far from any token's or nonce's expiry. */
export const T0 = 1_800_000_000_000;

/** The transaction of these shapes (token `tx-token`), its token lapsing 10 minutes after `now`. */
export const transactionAt = (now: number) =>
  new DeviceRiskTransaction({
    accountId: ACCOUNT,
    workflowExecutionId: EXECUTION,
    credentialId: CREDENTIAL,
    uploadUrl: PART_URL,
    finalizeUrl: EXECUTION_URL,
    tokenExpiresAt: now + 600_000,
    token: 'tx-token',
  });
