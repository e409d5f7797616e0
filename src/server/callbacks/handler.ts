/**
 * The callback receiver: the service POSTs the final status of a workflow execution to
 * the account's `callbackUrl`, and that callback is its authoritative answer (docs/vendor-contract.md
 * #the-answer). Callbacks carry no signature: the receiver checks their shape and their source,
 * records them in a store, answers 200 at once, then reads the details and hands them to
 * `onResult`, once per workflow execution and final status, retrying from the store with
 * backoff when the details or `onResult` fail. Nothing goes back to the browser.
 *
 * On a fleet sharing one store, the first instance to record a callback handles it, under a
 * lease: a copy delivered to any other instance calls nothing. A callback not yet handled is
 * also listed as pending in the store, and every instance sweeps that list now and then: a
 * callback whose instance died, or whose retry met the store away, is tried again by another,
 * with the same backoff, until `retryForMs` has passed (then `result_undelivered`).
 *
 * The service documents no resend of a callback answered otherwise than 2xx: one the store
 * cannot record is answered 503 and kept by this instance, recorded once the store is back or,
 * past a lease, delivered from its memory.
 *
 * The parts, one module per operation: settings.ts (the options), receive.ts (HTTP, up to the
 * record), body.ts (the callback's shape), delivery.ts (details, onResult, retries), sweep.ts
 * (the fleet's pending list), tasks.ts (this instance's timers, leases and work),
 * unrecorded.ts (a callback the store could not take), record.ts.
 */
import { callbackDelivery } from './delivery.js';
import { pendingList } from './pending.js';
import { callbackReceiver } from './receive.js';
import { callbackSettings } from './settings.js';
import { callbackSweep } from './sweep.js';
import { callbackTasks } from './tasks.js';
import { unrecordedCallbacks } from './unrecorded.js';
import type { CallbackHandler, CallbackHandlerOptions } from './types.js';

export type { CallbackBody, CallbackHandler, CallbackHandlerOptions, CallbackResult, SourceRule } from './types.js';

export function createCallbackHandler(options: CallbackHandlerOptions): CallbackHandler {
  const settings = callbackSettings(options);
  const pending = pendingList(settings.store, settings.namespace, settings.recordTtlMs, settings.now);
  const tasks = callbackTasks(settings.report);
  const deliver = callbackDelivery(settings, tasks, pending);
  const sweeper = callbackSweep(settings, tasks, pending, deliver);
  const received = (key: string) => {
    tasks.track(deliver(key));
    sweeper.sweepWhenDue();
  };
  const unrecorded = unrecordedCallbacks(settings, tasks, pending, received);
  const receive = callbackReceiver(settings, pending, unrecorded, received);
  return Object.assign(receive, {
    idle: () => tasks.idle(),
    sweep: () => sweeper.sweep(),
    close() {
      sweeper.stop();
      return tasks.close();
    },
  });
}
