/**
 * Every user-facing message of the browser package, in one place, with the
 * package prefix. Messages name the option or URL at fault and never carry
 * secrets (the browser holds none) or blackbox values.
 */

const PREFIX = '[blackbox-capture] ';

/** What a value is, for "expected X, received Y". */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return value.length > 80 ? `a string of ${value.length} characters` : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}

export const messages = {
  invalidOption: (name: string, expected: string, received: unknown) =>
    `${PREFIX}Invalid option "${name}": expected ${expected}, received ${describe(received)}.`,
  unknownOption: (name: string, known: readonly string[]) =>
    `${PREFIX}Unknown option "${name}". Known options: ${known.join(', ')}.`,
  notBrowser: () => `${PREFIX}captureBlackbox() needs a browser page (window and document); call it on the client only.`,
  shadowedGlobal: (name: string, received: unknown) =>
    `${PREFIX}Invalid option "globalName": window.${name} already holds ${describe(received)}, not a configuration object; choose another name.`,
  fieldMissing: (id: string) => `${PREFIX}Invalid option "field": no element with id ${JSON.stringify(id)} on the page.`,
  conflict: (name: string, running: unknown, requested: unknown) =>
    `${PREFIX}The loader is already running on this page with ${name} = ${describe(running)}; this call asked for ${describe(requested)}. The loader runs once per page, so one configuration must serve every call.`,
  loaderFailed: (url: string) =>
    `${PREFIX}The loader script ${url} failed to load (network error, 404, or blocked by a Content Security Policy or an ad blocker).`,
  loaderNotRun: (url: string) =>
    `${PREFIX}The script ${url} loaded but did not run as the device-intelligence loader (is the server answering it with HTML?).`,
  collectionFailed: (failedAndCauses: string) => `${PREFIX}Every collection script failed to load: ${failedAndCauses}`,
  firstPartyCause: (uriHook: string) =>
    `First party: check the reverse proxy at "${uriHook}" (it must strip the prefix and forward to the vendor's first-party host, and must not answer with an HTML page).`,
  thirdPartyCause: () => 'Third party: usually blocked by an ad blocker, a privacy extension or a Content Security Policy.',
  emptyBlackbox: () => `${PREFIX}The loader reported completion with an empty blackbox.`,
  timeout: (ms: number, partial: boolean, failed: string) =>
    `${PREFIX}No final blackbox within ${ms} ms${partial ? '; the error carries the latest partial blackbox' : ' and no update at all'}.${failed ? ` These collection scripts failed, so the loader may never complete: ${failed}.` : ''}`,
  aborted: () => `${PREFIX}The capture was aborted.`,
  postFailed: (url: string, detail: string) =>
    `${PREFIX}Delivering the blackbox to ${url} failed: ${detail}. The error carries the blackbox, so it can be sent again.`,
} as const;
