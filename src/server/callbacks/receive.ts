/**
 * Receiving a callback over HTTP: the checks before anything is written (method, caller,
 * media type, size, shape, the untagged allowance), then the record in the store, and 200 at
 * once. What happens next (details, onResult) is delivery's, after the answer.
 */
import {
  REFUSED_BODY_TOO_LARGE,
  REFUSED_MEDIA_TYPE,
  REFUSED_METHOD,
  REFUSED_SOURCE,
  REFUSED_TOO_MANY_CALLBACKS,
  bodyTimedOut,
  isBodyTimeout,
  json,
  readLimited,
  refuse,
  type RefusalCode,
} from '../net/http.js';
import { DeviceRiskError, ERR_CALLBACK_REFUSED, ERR_INVALID_CALLBACK, ERR_STORE_UNAVAILABLE } from '../errors.js';
import { MESSAGE_PREFIX, callbackMessages as say } from '../messages.js';
import type { RequestContext } from '../fetch-handler.js';
import { checkCallback, isFinal } from './body.js';
import { idsOf } from './delivery.js';
import type { UnrecordedCallbacks } from './unrecorded.js';
import type { PendingList } from './pending.js';
import { recordKey, type CallbackRecord } from './record.js';
import type { CallbackSettings } from './settings.js';
import type { CallbackBody } from './types.js';

type Receive = (request: Request, context?: RequestContext) => Promise<Response>;

/**
 * Answers a refusal, and tells onError: a callback refused is a decision that never
 * arrives, most often from a wrong set-up (the caller address, the retrieval host).
 */
function refusal(report: (error: unknown) => void) {
  return (
    status: number,
    code: RefusalCode | typeof ERR_INVALID_CALLBACK,
    message: string,
    why = message,
    headers?: Record<string, string>,
  ): Response => {
    const told = code === ERR_INVALID_CALLBACK ? ERR_INVALID_CALLBACK : ERR_CALLBACK_REFUSED;
    report(new DeviceRiskError(told, say.refused(status, code, why), { status, operation: 'callback' }));
    return refuse(status, code, message, headers);
  };
}

/** The checks of a request, up to a callback of the documented shape that may be written; or the refusal. */
export async function readCallback(
  settings: CallbackSettings,
  request: Request,
  context?: RequestContext,
): Promise<{ callback: CallbackBody; tagged: boolean } | Response> {
  const refused = refusal(settings.report);
  if (request.method !== 'POST') return refused(405, REFUSED_METHOD, say.usePost, undefined, { allow: 'POST' });
  if (!settings.allowed(request, context)) {
    const address = context?.clientAddress;
    const why = address ? say.sourceNotAllowed(address) : say.noCallerAddress;
    return refused(403, REFUSED_SOURCE, say.sourceRefused, why);
  }
  if (!/\bjson\b/i.test(request.headers.get('content-type') ?? ''))
    return refused(415, REFUSED_MEDIA_TYPE, say.sendJson);
  let text: string | undefined;
  try {
    text = await readLimited(request, settings.maxBodyBytes);
  } catch (error) {
    // A body that trickles in is cut at its time limit: 408, and said.
    if (!isBodyTimeout(error)) throw error;
    settings.report(error);
    return bodyTimedOut(error);
  }
  if (text === undefined) return refused(413, REFUSED_BODY_TOO_LARGE, say.tooLarge(settings.maxBodyBytes));
  let callback: CallbackBody;
  try {
    callback = checkCallback(JSON.parse(text), settings.client.retrievalOrigin);
  } catch (error) {
    const why = error instanceof DeviceRiskError ? error.message.replace(MESSAGE_PREFIX, '') : say.notJson;
    return refused(400, ERR_INVALID_CALLBACK, why);
  }
  // Before any write: a flood of callbacks the kit cannot place takes no store space.
  const tagged = (await settings.client.vouches?.(callback.userReference)) === true;
  // Stryker disable next-line StringLiteral: the limiter holds one source, whatever its name
  const wait = tagged ? 0 : settings.untagged.take('untagged');
  if (wait) {
    const why = say.tooManyUntagged(callback.workflowExecution.id);
    return refused(503, REFUSED_TOO_MANY_CALLBACKS, say.tooMany, why, { 'retry-after': String(wait) });
  }
  return { callback, tagged };
}

/**
 * The HTTP handler: checks, then records the callback (listed as pending first, so that a
 * record is never pending without its entry for the sweeps), answers 200, and calls
 * `received` with the record's key. An intermediate status is answered 200 and ignored. A
 * store away is 503, and since the service documents no resend, the decision is delivered from
 * this instance's memory all the same (`unrecorded`).
 */
export function callbackReceiver(
  settings: CallbackSettings,
  pending: PendingList,
  unrecorded: UnrecordedCallbacks,
  received: (key: string) => void,
): Receive {
  return async (request, context) => {
    const checked = await readCallback(settings, request, context);
    if (checked instanceof Response) return checked;
    const { callback, tagged } = checked;
    // Not final (ACQUIRED, …): nothing to read yet, and nothing to tell.
    if (!isFinal(callback)) return json({ received: true, ignored: true }, 200);
    const key = recordKey(settings.namespace, callback);
    if (unrecorded.holds(key)) return json({ received: true, duplicate: true }, 200);
    const record: CallbackRecord = { state: 'pending', attempts: 0, receivedAt: settings.now(), tagged, callback };
    let first: boolean;
    try {
      await pending.add(key);
      first = await settings.store.setIfAbsent(key, JSON.stringify(record), settings.recordTtlMs);
    } catch (error) {
      settings.report(error);
      if (unrecorded.take(key, record))
        settings.report(new DeviceRiskError(ERR_STORE_UNAVAILABLE, say.notRecordedHeld(idsOf(record))));
      return refuse(503, ERR_STORE_UNAVAILABLE, say.notRecorded, { 'retry-after': '5' });
    }
    // Recorded: a duplicate or a late copy calls nothing again, but takes over a record still
    // pending, due, whose lease nobody holds (its instance died).
    received(key);
    return json({ received: true, ...(first ? {} : { duplicate: true }) }, 200);
  };
}
