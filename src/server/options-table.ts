/**
 * A factory's options in one table: each option's default and its check, keyed by the options'
 * interface, so that the compiler names an option the table misses or one it no longer has
 * (docs/architecture.md#settings-modules). Each factory's settings module holds its table and
 * checks the options with it when the factory is called: a bad one is `invalid_configuration`
 * naming it, then, never a request lost later. docs/server.md's options tables are written
 * from these tables (scripts/reference-docs.mjs).
 */
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from './errors.js';
import { settingsMessages } from './messages.js';

/**
 * An option's default: the value the factory uses (a number, a boolean, a small object), or a
 * sentence for one it computes or a behaviour; `REQUIRED` when there is none.
 */
export type OptionDefault = number | boolean | string | { readonly [key: string]: number };

/** The default of an option the factory cannot do without. */
export const REQUIRED = 'required';

/** How an option is checked: `valid` of a given value, and what it must be, for the message. */
export interface OptionRule {
  readonly valid: (value: unknown) => boolean;
  /** The end of "`name` must be …". */
  readonly expects: string;
}

export interface OptionRow extends OptionRule {
  readonly default: OptionDefault;
}

/** Every option of `T`, required or not, with its row: a table missing one does not compile. */
export type OptionTable<T> = { readonly [K in keyof Required<T>]: OptionRow };

/**
 * The options a table of plain rows makes: each optional, a number or a boolean as its default
 * is. An interface that extends it has the rows' members, with their comments (JSDoc on a row
 * is its member's), so that an option is declared, defaulted and checked in one row.
 */
export type PlainOptions<T extends Record<string, OptionRow>> = {
  -readonly [K in keyof T]?: T[K]['default'] extends number
    ? number
    : T[K]['default'] extends boolean
      ? boolean
      : never;
};

/** The plain options of `table` as given, each missing one its row's default: what a factory reads. */
export function plainSettings<T extends Record<string, OptionRow>>(
  options: PlainOptions<T>,
  table: T,
): Required<PlainOptions<T>> {
  const given = options as Record<string, unknown>;
  return Object.fromEntries(Object.entries(table).map(([name, row]) => [name, given[name] ?? row.default])) as Required<
    PlainOptions<T>
  >;
}

/** Throws `invalid_configuration` naming the first option of `options` that its row refuses. */
export function checkOptions<T extends object>(options: T, table: OptionTable<T>): void {
  if (typeof options !== 'object' || options === null)
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, settingsMessages.notAnObject);
  for (const [name, row] of Object.entries<OptionRow>(table)) {
    const value = (options as Record<string, unknown>)[name];
    if (value === undefined ? row.default === REQUIRED : !row.valid(value))
      throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, settingsMessages.badOption(name, row.expects));
  }
}

const isPositive = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value) && value > 0;

/** The rules the tables share. */
export const RULES = {
  function: { valid: (value) => typeof value === 'function', expects: 'a function' },
  object: { valid: (value) => typeof value === 'object' && value !== null, expects: 'an object' },
  boolean: { valid: (value) => typeof value === 'boolean', expects: 'true or false' },
  text: { valid: (value) => typeof value === 'string' && value.length > 0, expects: 'a non-empty string' },
  positiveInteger: {
    valid: (value) => Number.isInteger(value) && (value as number) > 0,
    expects: 'a positive whole number',
  },
  positive: { valid: isPositive, expects: 'a positive number' },
  ms: { valid: isPositive, expects: 'a positive number of milliseconds' },
  msOrZero: {
    valid: (value) => value === 0 || isPositive(value),
    expects: 'zero or a positive number of milliseconds',
  },
  secondsOrZero: {
    valid: (value) => value === 0 || isPositive(value),
    expects: 'zero or a positive number of seconds',
  },
  /** Replicas a write waits for (Redis WAIT): none to 16. */
  replicaCount: {
    valid: (value) => Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 16,
    expects: 'a whole number from 0 to 16',
  },
  /** How long a write waits for its replicas: 1 ms to 10 s. */
  replicaWaitMs: {
    valid: (value) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 10_000,
    expects: 'a whole number of milliseconds from 1 to 10000',
  },
} as const satisfies Record<string, OptionRule>;

/** A rule of one of `values`. */
export const oneOf = (...values: readonly unknown[]): OptionRule => ({
  valid: (value) => values.includes(value),
  expects: `one of ${values.map((value) => JSON.stringify(value)).join(', ')}`,
});
