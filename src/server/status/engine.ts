/**
 * The browser engine a capture outcome came from, read from the report's User-Agent: a
 * closed list, so that the label stays bounded whatever a client sends. An outcome from an
 * unknown or missing agent is `other`.
 */
export type EngineLabel = 'chromium' | 'firefox' | 'webkit' | 'other';

export function engineOf(userAgent: string | null | undefined): EngineLabel {
  if (!userAgent) return 'other';
  // Firefox on iOS is WebKit underneath and says FxiOS, not Firefox/.
  if (/\bFirefox\//.test(userAgent)) return 'firefox';
  // Chrome, Edge, Opera, Samsung Internet and Chromium say Chrome/; iOS browsers do not.
  if (/\b(Chrome|Chromium|HeadlessChrome)\//.test(userAgent)) return 'chromium';
  if (/\bAppleWebKit\//.test(userAgent)) return 'webkit';
  return 'other';
}

/** The decision types the service documents; any other is counted as `other`. */
export const DECISION_LABELS = ['PASSED', 'REJECTED', 'WARNING', 'NOT_EXECUTED', 'other'] as const;

export function decisionLabel(type: string): (typeof DECISION_LABELS)[number] {
  return (DECISION_LABELS as readonly string[]).includes(type) ? (type as (typeof DECISION_LABELS)[number]) : 'other';
}
