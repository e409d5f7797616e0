/**
 * A callback's record in the store: what arrived, and how far its handling has gone. Kept
 * in the store rather than in memory so that any instance of a fleet can carry it on
 * (docs/fleet.md): the attempts and the next try keep the backoff across instances.
 */
import { keyPart } from '../store/store.js';
import type { CallbackBody } from './types.js';

export interface CallbackRecord {
  /** `failed`: given up after retryForMs. */
  state: 'pending' | 'done' | 'failed';
  attempts: number;
  receivedAt: number;
  /** Epoch ms of the next try after a failure: kept in the store, so any instance keeps the backoff. */
  nextAttemptAt?: number;
  /** The callback carries the kit's own reference (checked once, on arrival). */
  tagged?: boolean;
  callback: CallbackBody;
}

/**
 * The record's key: one per workflow execution, final status and account. UUIDs compare
 * case-insensitively, so one execution is one record however its id is written. The account
 * is part of it: a copy naming another account (whose details read is refused, and its record
 * forgotten) is never the record the genuine callback is answered `duplicate` by.
 */
export const recordKey = (namespace: string, callback: CallbackBody): string =>
  `${namespace}:${keyPart(callback.workflowExecution.id.toLowerCase())}:${callback.workflowExecution.status}:${keyPart(callback.account.id.toLowerCase())}`;

/** The store's namespace of one tenant's callbacks (its client id). */
export const callbackNamespace = (clientId: string | undefined): string => `${keyPart(clientId ?? '')}:callback`;

export const parseRecord = (stored: string): CallbackRecord => JSON.parse(stored) as CallbackRecord;
