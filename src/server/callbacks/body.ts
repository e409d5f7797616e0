/**
 * The callback's documented shape (docs/vendor-contract.md#the-answer), checked before
 * anything is written: a callback carries no signature, so its ids and links are all the
 * receiver can hold it to.
 */
import { FINAL_STATUSES } from '../api/result.js';
import { DeviceRiskError, ERR_INVALID_CALLBACK } from '../errors.js';
import { callbackMessages } from '../messages.js';
import type { CallbackBody } from './types.js';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/**
 * A status as the service writes them: the final ones (FINAL_STATUSES) are handled; any other
 * of this form (INITIATED, ACQUIRED, or one the service adds) is an intermediate callback,
 * accepted and ignored (docs/vendor-contract.md#the-answer).
 */
const STATUS_FORM = /^[A-Z][A-Z0-9_]{0,63}$/;

/** Whether a checked callback reports a final status (the only ones handled). */
export const isFinal = (callback: CallbackBody): boolean => FINAL_STATUSES.includes(callback.workflowExecution.status);

/**
 * Whether `href` is exactly `path` on the retrieval origin (no query, no credentials). A JSON
 * value that is not a string is no URL either: `new URL` refuses "5", "null" and "[object Object]".
 */
function onRetrieval(href: unknown, path: string, retrievalOrigin: string): boolean {
  let url: URL;
  try {
    url = new URL(href as string);
  } catch {
    return false;
  }
  return url.origin === retrievalOrigin && url.pathname === path && !url.search && !url.username;
}

/**
 * Checks the documented shape; the hrefs must point at the retrieval host, at these ids.
 * Throws `invalid_callback` saying what is wrong.
 */
export function checkCallback(body: unknown, retrievalOrigin: string): CallbackBody {
  const shape = callbackMessages.shape;
  const fail = (what: string): never => {
    throw new DeviceRiskError(ERR_INVALID_CALLBACK, callbackMessages.invalid(what));
  };
  const b = body as Partial<CallbackBody> | null;
  if (!b || typeof b !== 'object' || Array.isArray(b)) return fail(shape.notAnObject);
  if (typeof b.callbackSentAt !== 'string' || Number.isNaN(Date.parse(b.callbackSentAt))) fail(shape.noSentAt);
  if (b.userReference !== undefined && typeof b.userReference !== 'string') fail(shape.badReference);
  const execution = b.workflowExecution;
  const account = b.account;
  if (!execution || typeof execution.id !== 'string' || !UUID.test(execution.id)) fail(shape.noExecutionId);
  if (!account || typeof account.id !== 'string' || !UUID.test(account.id)) fail(shape.noAccountId);
  if (typeof execution!.status !== 'string' || !STATUS_FORM.test(execution!.status)) fail(shape.badStatus);
  if (typeof execution!.definitionKey !== 'string' && typeof execution!.definitionKey !== 'number')
    fail(shape.noDefinitionKey);
  const accountPath = `/api/v1/accounts/${account!.id}`;
  if (!onRetrieval(execution!.href, `${accountPath}/workflow-executions/${execution!.id}`, retrievalOrigin))
    fail(shape.executionOff(retrievalOrigin));
  if (!onRetrieval(account!.href, accountPath, retrievalOrigin)) fail(shape.accountOff(retrievalOrigin));
  return b as CallbackBody;
}
