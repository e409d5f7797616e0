/**
 * Entry of the UMD file for script tags (global `BlackboxCapture`). Besides the
 * API it starts a capture by itself when its own tag carries `data-loader-url`.
 */
import { startFromScriptTag } from './declarative.js';
import { noop } from './loader-run.js';

export * from './index.js';

/** The declarative capture started by this tag, if it carries `data-loader-url`. */
export const ready: Promise<string> | undefined =
  typeof document === 'undefined' ? undefined : startFromScriptTag(document.currentScript);
// Rejections are reported through the blackboxerror event; keep them from also being "unhandled".
ready?.catch(noop);
