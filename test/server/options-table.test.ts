// The options tables (src/server/options-table.ts): each row checks its option. docs/server.md's
// table of each factory's options is written from these tables by scripts/reference-docs.mjs
// (test/scripts/reference-docs.test.ts holds the committed text to them).
import { describe, expect, it } from 'vitest';
import { OPTION_TABLES } from '../../scripts/reference-blocks.js';
import { checkOptions } from '../../src/server/options-table.js';
import { MEMORY_QUEUE_OPTIONS } from '../../src/server/queue/settings.js';

describe('the rows', () => {
  it.each(Object.entries(OPTION_TABLES))('%s: every row refuses a value of no kind', (_, table) => {
    for (const [name, row] of Object.entries(table)) expect([name, row.valid(Symbol('bad'))]).toEqual([name, false]);
  });

  it('checkOptions names the option a row refuses', () => {
    expect(() => checkOptions({ maxQueued: 0 }, MEMORY_QUEUE_OPTIONS)).toThrow(
      expect.objectContaining({ code: 'invalid_configuration', message: expect.stringContaining('maxQueued must be') }),
    );
  });
});
