// The options tables (src/server/options-table.ts): docs/server.md's table of each factory's
// options names every option of its settings module, in its order, with its default as the
// module has it. A new option is a row in the module (the compiler asks for it) and a row here.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLIENT_OPTIONS, TOKEN_SOURCE_OPTIONS } from '../../src/server/api/settings.js';
import { CALLBACK_OPTIONS } from '../../src/server/callbacks/settings.js';
import { ENDPOINT_OPTIONS } from '../../src/server/endpoint/settings.js';
import { checkOptions, REQUIRED, type OptionDefault, type OptionRow } from '../../src/server/options-table.js';
import { PROXY_OPTIONS } from '../../src/server/proxy/settings.js';
import { BULLMQ_QUEUE_OPTIONS, FILE_QUEUE_OPTIONS, MEMORY_QUEUE_OPTIONS } from '../../src/server/queue/settings.js';
import { MEMORY_STORE_OPTIONS, REDIS_STORE_OPTIONS } from '../../src/server/store/settings.js';
import {
  METRICS_HANDLER_OPTIONS,
  STATUS_HANDLER_OPTIONS,
  STATUS_MONITOR_OPTIONS,
} from '../../src/server/status/settings.js';

/** Each table by the heading of its section in docs/server.md. */
export const TABLES: Record<string, Record<string, OptionRow>> = {
  "The endpoint's options": ENDPOINT_OPTIONS,
  "The callback handler's options": CALLBACK_OPTIONS,
  "The client's options": CLIENT_OPTIONS,
  "The token source's options": TOKEN_SOURCE_OPTIONS,
  "The proxy's options": PROXY_OPTIONS,
  "The memory queue's options": MEMORY_QUEUE_OPTIONS,
  "The memory store's options": MEMORY_STORE_OPTIONS,
  "The file queue's options": FILE_QUEUE_OPTIONS,
  "The BullMQ queue's options": BULLMQ_QUEUE_OPTIONS,
  "The Redis store's options": REDIS_STORE_OPTIONS,
  "The status monitor's options": STATUS_MONITOR_OPTIONS,
  "The metrics handler's options": METRICS_HANDLER_OPTIONS,
  "The status handler's options": STATUS_HANDLER_OPTIONS,
};

/** A default as the docs write it: a value in code type, a sentence as it is. */
export function defaultText(value: OptionDefault): string {
  if (value === REQUIRED) return '**required**';
  if (typeof value === 'string') return value;
  if (typeof value === 'object')
    return `\`{ ${Object.entries(value)
      .map(([key, n]) => `${key}: ${n}`)
      .join(', ')} }\``;
  return `\`${value}\``;
}

/** The markdown table of `table`, as docs/server.md must hold it. */
export const tableText = (table: Record<string, OptionRow>): string =>
  [
    '| Option | Default |',
    '|---|---|',
    ...Object.entries(table).map(([name, row]) => `| \`${name}\` | ${defaultText(row.default)} |`),
  ].join('\n');

const DOCS = readFileSync(new URL('../../docs/server.md', import.meta.url), 'utf8');

/** The table under `heading` in docs/server.md: its lines that start with "|". */
function documented(heading: string): string {
  const at = DOCS.indexOf(`\n### ${heading}\n`);
  expect(at, `docs/server.md has a section "### ${heading}"`).toBeGreaterThan(-1);
  const section = DOCS.slice(at + 1).split(/\n(?=#)/)[0]!;
  return section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .join('\n');
}

describe('docs/server.md options tables', () => {
  it.each(Object.keys(TABLES))('%s: one row per option, with its default', (heading) => {
    expect(documented(heading)).toBe(tableText(TABLES[heading]!));
  });

  it('fails on a row missing or a default changed (the comparison above can fail)', () => {
    const { maxBodyBytes: _, ...fewer } = ENDPOINT_OPTIONS;
    expect(tableText(fewer)).not.toBe(documented("The endpoint's options"));
    const changed = { ...ENDPOINT_OPTIONS, maxBodyBytes: { ...ENDPOINT_OPTIONS.maxBodyBytes, default: 1 } };
    expect(tableText(changed)).not.toBe(documented("The endpoint's options"));
  });
});

describe('the rows', () => {
  it.each(Object.entries(TABLES))('%s: every row refuses a value of no kind', (_, table) => {
    for (const [name, row] of Object.entries(table)) expect([name, row.valid(Symbol('bad'))]).toEqual([name, false]);
  });

  it('checkOptions names the option a row refuses', () => {
    expect(() => checkOptions({ maxQueued: 0 }, MEMORY_QUEUE_OPTIONS)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining('maxQueued must be') }),
    );
  });
});
