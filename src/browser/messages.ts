/**
 * Every user-facing message of the browser package, in one place, with the
 * package prefix. Messages name the option or URL at fault and never carry
 * blackbox values. Kept terse: every byte here is paid by every checkout page.
 */

const PREFIX = '[blackbox-capture] ';

/** What a value is, for "expected X, received Y". */
export function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (value && typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

export const invalidOption = (name: string, expected: string, received: unknown) =>
  `${PREFIX}Invalid option "${name}": expected ${expected}, received ${describe(received)}.`;
export const unknownOption = (name: string, known: readonly string[]) => `${PREFIX}Unknown option "${name}"; known: ${known.join(', ')}.`;
export const notBrowser = () => `${PREFIX}captureBlackbox() needs a browser page; call it on the client only.`;
export const shadowedGlobal = (name: string, received: unknown) =>
  `${PREFIX}Invalid option "globalName": window.${name} already holds ${describe(received)}, not a config object.`;
export const conflict = (name: string, running: unknown, requested: unknown) =>
  `${PREFIX}The loader runs once per page and already has ${name} = ${describe(running)}; this call asked for ${describe(requested)}.`;
export const loaderFailed = (url: string, ran: boolean) =>
  `${PREFIX}The loader ${url} ${ran ? 'loaded but did not run (an HTML page?)' : 'failed to load (404, network, CSP or blocker)'}.`;
export const collectionFailed = (failed: string) => `${PREFIX}Every collection script failed: ${failed}`;
export const failedScripts = (names: string, uriHook: string | false, thirdParty: boolean) =>
  `${names}.${uriHook === false ? '' : ` First party: check the reverse proxy at "${uriHook}" (strip the prefix, no HTML fallback).`}${thirdParty ? ' Third party: an ad blocker or CSP.' : ''}`;
export const emptyBlackbox = () => `${PREFIX}The loader completed with an empty blackbox.`;
export const timeout = (ms: number, partial: boolean, failed: string) =>
  `${PREFIX}No final blackbox within ${ms} ms${partial ? '; the error carries the partial one' : ' and no update at all'}.${failed ? ` Failed so far: ${failed}` : ''}`;
export const aborted = () => `${PREFIX}Aborted.`;
export const postFailed = (url: string, detail: string) => `${PREFIX}Delivering to ${url} failed: ${detail}; the error carries the blackbox.`;
