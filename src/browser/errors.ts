import * as messages from './messages.js';

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
  declare readonly blackbox?: string;
  declare readonly url?: string;
  declare readonly status?: number;

  constructor(code: BlackboxCaptureErrorCode, message: string, details: BlackboxCaptureErrorDetails = {}) {
    super(message);
    this.code = code;
    // Only the details that are there, so `'blackbox' in error` means one was produced.
    for (const key in details) if (details[key as keyof BlackboxCaptureErrorDetails] !== undefined) (this as Record<string, unknown>)[key] = details[key as keyof BlackboxCaptureErrorDetails];
  }
}

/** True for errors of this package, also across copies of it on one page. */
export const isBlackboxCaptureError = (error: unknown): error is BlackboxCaptureError =>
  error instanceof BlackboxCaptureError ||
  (error instanceof Error && error.name === 'BlackboxCaptureError' && typeof (error as { code?: unknown }).code === 'string');

export const invalidOption = (name: string, expected: string, received: unknown): never => {
  throw new BlackboxCaptureError('invalid_option', messages.invalidOption(name, expected, received));
};
