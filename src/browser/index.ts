/** blackbox-capture: the browser package (ESM entry). Importing it touches no window or document. */
export { captureBlackbox } from './capture.js';
export { BlackboxCaptureError, isBlackboxCaptureError } from './errors.js';
export type { BlackboxCaptureErrorCode, BlackboxCaptureErrorDetails } from './errors.js';
export type { CaptureOptions, PostOptions, FieldTarget } from './options.js';
export type {
  CaptureOutcome,
  CaptureOutcomeKind,
  VendorPassthrough,
  VendorBoolean,
  VendorConfig,
} from '../shared/types.js';
