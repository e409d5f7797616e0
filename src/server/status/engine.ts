/**
 * The browser engine a capture outcome came from, read from the report's User-Agent: a
 * closed list, so that the label stays bounded whatever a client sends. An outcome from an
 * unknown or missing agent is `other`. The `outcomes` metric's help is made from ENGINES.
 */
import { DECISION_TYPES } from '../api/result.js';

export const ENGINES = ['chromium', 'firefox', 'webkit', 'other'] as const;
export type EngineLabel = (typeof ENGINES)[number];

export function engineOf(userAgent: string | null | undefined): EngineLabel {
  if (!userAgent) return 'other';
  // Firefox on iOS is WebKit underneath and says FxiOS, not Firefox/.
  if (/\bFirefox\//.test(userAgent)) return 'firefox';
  // Chrome, Edge, Opera, Samsung Internet and Chromium say Chrome/; iOS browsers do not.
  if (/\b(Chrome|Chromium|HeadlessChrome)\//.test(userAgent)) return 'chromium';
  if (/\bAppleWebKit\//.test(userAgent)) return 'webkit';
  return 'other';
}

/** The decision types the service documents, and `other` for any other (the `decisions` metric's help is made from it). */
export const DECISION_LABELS = [...DECISION_TYPES, 'other'] as const;
export type DecisionLabel = (typeof DECISION_LABELS)[number];

export function decisionLabel(type: string): DecisionLabel {
  return (DECISION_LABELS as readonly string[]).includes(type) ? (type as DecisionLabel) : 'other';
}
