/**
 * A capture outcome as the page sent it: untrusted input, read strictly. Anything that
 * is not a well-formed outcome is dropped (never refused: the blackbox beside it still
 * counts).
 */
import type { CaptureOutcome, CaptureOutcomeKind } from '../../shared/types.js';

/**
 * Every kind, keyed by the union (src/shared/types.ts): one missing or one too many does not
 * compile. With what it means and where to look, as docs/browser.md#capture-outcomes lists them
 * (written by scripts/reference-docs.mjs).
 */
export const OUTCOMES: Record<CaptureOutcomeKind, { readonly meaning: string; readonly lookAt: string }> = {
  complete: { meaning: 'every source contributed', lookAt: '—' },
  'degraded-first-party': {
    meaning: 'first-party scripts failed (404, or an HTML page in their place), the third party delivered',
    lookAt: 'the reverse proxy (`npx blackbox-capture doctor`)',
  },
  'degraded-third-party': {
    meaning: 'the third party failed (a blocker, CSP), the first party delivered',
    lookAt: 'CSP; a steady share is ad blockers',
  },
  'timeout-partial': { meaning: 'no final blackbox within `timeoutMs`', lookAt: "the error's `scripts`, the network" },
  collection_failed: { meaning: 'the error of that code: the collection failed', lookAt: 'the error' },
  loader_failed: { meaning: 'the error of that code: the loader did not run', lookAt: 'the error' },
  consent_denied: { meaning: '`consent` did not grant: nothing was collected', lookAt: 'your consent flow' },
  aborted: { meaning: 'the error of that code: the call was aborted', lookAt: 'the error' },
};

/** The kinds a page may report, in the union's order. */
const OUTCOME_KINDS = Object.keys(OUTCOMES) as readonly CaptureOutcomeKind[];

/** The outcome in a request body, or undefined when there is none or it is malformed. */
export function parseOutcome(value: unknown): CaptureOutcome | undefined {
  // Object() of anything that is no object (null, a number, a string) has none of these properties.
  const { outcome, scripts, durationMs } = Object(value) as Record<string, unknown>;
  if (!OUTCOME_KINDS.includes(outcome as CaptureOutcomeKind)) return undefined;
  if (
    !Array.isArray(scripts) ||
    scripts.length > 10 ||
    !scripts.every((name) => typeof name === 'string' && /^(fp|io)_[\w.-]{1,60}$/.test(name))
  )
    return undefined;
  if (typeof durationMs !== 'number' || !(durationMs >= 0 && durationMs <= 3_600_000)) return undefined;
  return {
    outcome: outcome as CaptureOutcomeKind,
    scripts: [...(scripts as string[])],
    durationMs: Math.round(durationMs),
  };
}
