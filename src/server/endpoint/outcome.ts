/**
 * A capture outcome as the page sent it: untrusted input, read strictly. Anything that
 * is not a well-formed outcome is dropped (never refused: the blackbox beside it still
 * counts).
 */
import type { CaptureOutcome, CaptureOutcomeKind } from '../../shared/types.js';

/** Every kind, keyed by the union (src/shared/types.ts): one missing or one too many does not compile. */
const KINDS: Record<CaptureOutcomeKind, true> = {
  complete: true,
  'degraded-first-party': true,
  'degraded-third-party': true,
  'timeout-partial': true,
  collection_failed: true,
  loader_failed: true,
  consent_denied: true,
  aborted: true,
};

/** The kinds a page may report, in the union's order. */
const OUTCOME_KINDS = Object.keys(KINDS) as readonly CaptureOutcomeKind[];

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
