/**
 * Repair of blackboxes damaged on their way to the server by the integrator's own form and
 * URL code: `+` turned into spaces by form decoding, `%2B` left percent-encoded, line breaks
 * from wrapping, surrounding quotes. The blackbox alphabet (A-Z a-z 0-9 + / @ =) holds none
 * of these characters, so each repair is lossless: it restores exactly what was sent. A value
 * that is still no blackbox afterwards is refused as `blackbox_damaged`, naming the cause.
 */
import { BLACKBOX_PATTERN, checkBlackbox, MAX_BLACKBOX_LENGTH } from '../api/device-risk-client.js';
import { DeviceRiskError, ERR_BLACKBOX_DAMAGED, ERR_INVALID_BLACKBOX } from '../errors.js';
import { endpointMessages } from '../messages.js';
import type { BLACKBOX_REPAIRS } from '../status/names.js';

/** A repair made, by its name in the `repairs` metric (the list and what each repairs: status/names.ts). */
export type BlackboxRepair = keyof typeof BLACKBOX_REPAIRS;

export interface RepairedBlackbox {
  blackbox: string;
  /** What was repaired, in the order applied; empty for an intact blackbox. */
  repairs: BlackboxRepair[];
}

const QUOTED = /^\s*(["'])(.*)\1\s*$/s;
/** Any "%": the alphabet has none, so it is percent-encoding, intact or broken. */
const PERCENT = /%/;

/** The blackbox as sent, repaired where the damage is known and the repair lossless. */
export function repairBlackbox(value: unknown): RepairedBlackbox {
  // Damage can make it longer (%2B is three characters for one): a bound before any work.
  if (typeof value !== 'string' || value.length > 3 * MAX_BLACKBOX_LENGTH + 2)
    // Stryker disable next-line ArrayDeclaration: checkBlackbox throws for every value this line takes
    return { blackbox: checkBlackbox(value), repairs: [] };
  // Stryker disable next-line ConditionalExpression: a fast path: none of the repairs below applies to an intact blackbox
  if (BLACKBOX_PATTERN.test(value)) return { blackbox: checkBlackbox(value), repairs: [] };
  const repairs: BlackboxRepair[] = [];
  let text = value;
  const quoted = QUOTED.exec(text);
  if (quoted) {
    text = quoted[2]!;
    repairs.push('quotes');
  }
  if (/[\r\n]/.test(text)) {
    // Stryker disable next-line Regex: one break or a run of them, each goes
    text = text.replace(/[\r\n]+/g, '');
    repairs.push('line_breaks');
  }
  if (PERCENT.test(text)) {
    try {
      text = decodeURIComponent(text);
    } catch {
      throw new DeviceRiskError(ERR_BLACKBOX_DAMAGED, endpointMessages.brokenPercentEncoding);
    }
    repairs.push('percent_encoding');
  }
  if (text.includes(' ')) {
    // Form decoding reads "+" as a space; the alphabet has no space, so each one was a "+".
    text = text.replace(/ /g, '+');
    repairs.push('spaces_for_plus');
  }
  if (repairs.length === 0) return { blackbox: checkBlackbox(value), repairs };
  try {
    return { blackbox: checkBlackbox(text), repairs };
  } catch (error) {
    const code = (error as DeviceRiskError).code;
    throw new DeviceRiskError(
      ERR_BLACKBOX_DAMAGED,
      endpointMessages.stillDamaged(
        repairs,
        // Stryker disable next-line ConditionalExpression: checkBlackbox throws invalid_blackbox only
        code === ERR_INVALID_BLACKBOX,
        (error as Error).message.replace(/^\[[^\]]+\] /, ''),
      ),
      { cause: error },
    );
  }
}
