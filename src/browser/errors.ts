import type { MessageArgs } from './messages.js';

/** Stable codes: switch on these, never on message text. */
export type BlackboxCaptureErrorCode =
  | 'invalid_option'
  | 'loader_failed'
  | 'collection_failed'
  | 'timeout'
  | 'aborted'
  | 'option_conflict'
  | 'not_browser'
  | 'post_failed'
  | 'consent_denied'
  | 'blackbox_used';

export interface BlackboxCaptureErrorDetails {
  cause?: unknown;
  /** The latest blackbox: partial for `timeout`, final for `post_failed`. */
  blackbox?: string;
  /** The URL at fault (loader or endpoint). */
  url?: string;
  /** HTTP status of the last delivery attempt. */
  status?: number;
  /** The collection scripts that failed (`collection_failed`, `timeout`), e.g. `fp_static_wdp`. */
  scripts?: string[];
}

/** What the package's messages and warnings start with. */
export const PREFIX = '[blackbox-capture] ';

export class BlackboxCaptureError extends Error {
  override readonly name = 'BlackboxCaptureError';
  readonly code: BlackboxCaptureErrorCode;
  declare readonly cause?: unknown;
  declare readonly blackbox?: string;
  declare readonly url?: string;
  declare readonly status?: number;
  declare readonly scripts?: string[];

  constructor(code: BlackboxCaptureErrorCode, message: string, details: BlackboxCaptureErrorDetails = {}) {
    super(message);
    this.code = code;
    // Only the details that are there, so `'blackbox' in error` means one was produced.
    for (const key in details)
      if (details[key as keyof BlackboxCaptureErrorDetails] !== undefined)
        (this as Record<string, unknown>)[key] = details[key as keyof BlackboxCaptureErrorDetails];
  }
}

/** True for errors of this package, also across copies of it on one page. */
export const isBlackboxCaptureError = (error: unknown): error is BlackboxCaptureError =>
  error instanceof BlackboxCaptureError ||
  (error instanceof Error &&
    error.name === 'BlackboxCaptureError' &&
    typeof (error as { code?: unknown }).code === 'string');

type Messages = Record<string, (...args: unknown[]) => string>;
/** Each error's message writer, from its facts (kind, arguments), waiting for the texts until explain() runs it. */
const writers = new WeakMap<object, (messages: Messages) => string>();

type MessageKind = keyof MessageArgs;
type Details = BlackboxCaptureErrorDetails;
/**
 * fault()'s arguments, checked against the message they will fill: a code whose message
 * is its own takes that message's arguments (none may be left out when it takes any); a
 * finer kind is named last, after the details.
 */
export type FaultArgs =
  | {
      [Code in MessageKind & BlackboxCaptureErrorCode]: MessageArgs[Code] extends []
        ? [code: Code, args?: [], details?: Details]
        : [code: Code, args: MessageArgs[Code], details?: Details];
    }[MessageKind & BlackboxCaptureErrorCode]
  | {
      [Kind in MessageKind]: [code: BlackboxCaptureErrorCode, args: MessageArgs[Kind], details: Details, kind: Kind];
    }[MessageKind];

/**
 * An error whose message is still to be written: `kind` names its message in
 * messages.ts (the code, or a finer kind such as `unknown_option`).
 */
export function fault(...fact: FaultArgs): BlackboxCaptureError;
export function fault(
  code: BlackboxCaptureErrorCode,
  args: unknown[] = [],
  details?: Details,
  kind: string = code,
): BlackboxCaptureError {
  const error = new BlackboxCaptureError(code, PREFIX + code, details);
  writers.set(error, (messages) => messages[kind]!(...args));
  return error;
}

/** Throws `invalid_option` for `name`. */
export function invalidOption(name: string, received: unknown): never {
  throw fault('invalid_option', [name, received]);
}

/**
 * Writes the full message before an error reaches the caller. The text lives in a
 * chunk of its own, loaded only on failure; if even that fails to load (the
 * network is gone), the code-only message stands and the details are all there.
 */
export async function explain(error: unknown): Promise<unknown> {
  const write = writers.get(error as object);
  if (write) {
    // Several calls may share one error: each writes the same message, none finds it half done.
    try {
      (error as Error).message = PREFIX + write((await import('./messages.js')).MESSAGES as Messages);
    } catch {
      // keep the code-only message
    }
  }
  return error;
}

/** A rejection with the error's message written. */
export const explained = (error: unknown): Promise<never> => explain(error).then((written) => Promise.reject(written));
