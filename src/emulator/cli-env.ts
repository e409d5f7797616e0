/**
 * What the emulator command reads from its environment, checked before anything starts: a
 * port base written as plain decimal digits (`Number()` would also take "1e3", "0x10C0",
 * " 4300 ", "+4300" and "4300.0"), and values that print as one line of `--env` each.
 */

/** Ports the emulator listens on from its base: base to base+6 (cli.ts says which is which). */
const PORTS = 7;

/** The port base `text` names, or the reason it names none. Plain decimal digits only, from 1 to 65529. */
export function parsePortBase(text: string): { base: number } | { error: string } {
  const got = JSON.stringify(text);
  if (!/^\d+$/.test(text)) return { error: `EMULATOR_PORT_BASE must be written in decimal digits only (got ${got})` };
  const base = Number(text);
  if (!(base > 0 && base + PORTS - 1 < 65536))
    return { error: `EMULATOR_PORT_BASE must be a port number, at most ${65536 - PORTS} (got ${text})` };
  return { base };
}

/**
 * Characters that would break a printed line: C0 and C1 controls, DEL, and the Unicode line
 * and paragraph separators. A newline in a secret would add a line (a variable) to `--env`.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const BREAKS_A_LINE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** Undefined when `value` prints as one line; else the reason, naming `name` but never the value. */
export function lineSafe(name: string, value: string): string | undefined {
  return BREAKS_A_LINE.test(value) ? `${name} must not contain control characters or line breaks` : undefined;
}

/**
 * Whether the service's limits are kept, from `EMULATOR_LIMITS`: `on` (the default, as the
 * service does: docs/vendor-contract.md#the-service) or `off`; anything else is refused.
 */
export function parseLimits(text: string | undefined): { limits: boolean } | { error: string } {
  if (text === undefined || text === '' || text === 'on') return { limits: true };
  if (text === 'off') return { limits: false };
  return { error: `EMULATOR_LIMITS must be on or off (got ${JSON.stringify(text)})` };
}
