/**
 * The blackbox upload's intent in the key's record: an owner that dies (or whose lease
 * lapses while the store is away) with its upload sent may still see it land, and a second
 * upload beside it would give the transaction two blackboxes. Like the account create's
 * intent (`creating`, leased-attempt.ts), it goes with a write the attempt makes anyway.
 */
import type { DeviceRiskClient } from '../api/device-risk-client.js';
import type { Now } from '../time/clock.js';
import type { DeviceRiskProgress } from './check.js';
import { inUse, type KeyRecord } from './key-record.js';

/** The intent of an upload starting now: one request's time limit, and a lease for the owner to be seen gone. */
export function uploadIntent(owner: string, client: DeviceRiskClient, leaseMs: number, now: Now) {
  return { owner, until: now() + (client.uploadTimeoutMs ?? 60_000) + leaseMs };
}

/**
 * The progress an attempt resumes from the record: its transaction and whether the blackbox
 * is there. An upload the record does not show may have landed (the service's status says
 * so: past INITIATED) or may still land (an intent whose time is not up: 409, the caller
 * comes back). Only when neither is true is it made (again).
 */
export async function resumedProgress(
  client: DeviceRiskClient,
  record: KeyRecord,
  now: Now,
): Promise<DeviceRiskProgress | Response> {
  const progress: DeviceRiskProgress = {
    ...(record.transaction ? { transaction: await client.openTransaction(record.transaction) } : {}),
    ...(record.uploaded ? { uploaded: true } : {}),
  };
  if (!progress.transaction || progress.uploaded) return progress;
  const status = await client.status(progress.transaction).catch(() => undefined);
  if (status !== undefined && status !== 'INITIATED') return { ...progress, uploaded: true };
  const until = record.uploading?.until;
  if (until !== undefined && now() < until) return inUse(Math.ceil((until - now()) / 1000));
  return progress;
}
