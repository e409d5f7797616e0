import { messages } from './messages.js';

/** Stable codes: switch on these, never on message text. */
export type BlackboxCaptureErrorCode =
  | 'invalid_option'
  | 'loader_failed'
  | 'collection_failed'
  | 'timeout'
  | 'aborted'
  | 'option_conflict'
  | 'not_browser'
  | 'post_failed';

export interface BlackboxCaptureErrorDetails {
  cause?: unknown;
  /** The latest blackbox: partial for `timeout`, final for `post_failed`. */
  blackbox?: string;
  /** The URL at fault (loader or endpoint). */
  url?: string;
  /** HTTP status of the last delivery attempt. */
  status?: number;
}

export class BlackboxCaptureError extends Error {
  override readonly name = 'BlackboxCaptureError';
  readonly code: BlackboxCaptureErrorCode;
  readonly blackbox?: string;
  readonly url?: string;
  readonly status?: number;

  constructor(code: BlackboxCaptureErrorCode, message: string, details: BlackboxCaptureErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    if (details.blackbox !== undefined) this.blackbox = details.blackbox;
    if (details.url !== undefined) this.url = details.url;
    if (details.status !== undefined) this.status = details.status;
  }
}

/** True for errors of this package, also across copies of it on one page. */
export function isBlackboxCaptureError(error: unknown): error is BlackboxCaptureError {
  return (
    error instanceof BlackboxCaptureError ||
    (error instanceof Error && error.name === 'BlackboxCaptureError' && typeof (error as { code?: unknown }).code === 'string')
  );
}

export const invalidOption = (name: string, expected: string, received: unknown): BlackboxCaptureError =>
  new BlackboxCaptureError('invalid_option', messages.invalidOption(name, expected, received));
