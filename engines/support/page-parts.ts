/** The pieces of the engine specs' pages and of what they check. */
import { decodeBlackbox } from '../../src/emulator/index.js';

/** A page of the integrator site: `head` and `body` as given. */
export const doc = (head: string, body = '') =>
  `<!doctype html><html><head><meta charset="utf-8">${head}</head><body>${body}</body></html>`;

/** The collection scripts in an emulated blackbox, sorted; undefined when it is none. */
export const sourcesOf = (blackbox: string | undefined) =>
  decodeBlackbox(blackbox ?? '')
    ?.sources.slice()
    .sort();

/** A final blackbox's sources: every collection script. */
export const FINAL = ['fp_dyn', 'fp_static', 'tp'];
