/**
 * The README's browser support table is true of this machine's engines: a row for each
 * engine, naming the version the engine specs ran in (its major version: Debian's security
 * updates move the rest), and no feature marked other than supported.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { availableEngines, launch, type EngineName } from '../test/support/engines.mjs';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const table = README.slice(README.indexOf('<!-- browser-support -->')).split('\n\n')[0]!.split('\n').slice(3);

/** The row's first cell for each engine, as the README names it. */
const NAMES: Record<EngineName, RegExp> = {
  chromium: /^Chromium (\d+)$/,
  firefox: /^Firefox ESR (\d+)$/,
  webkit: /^WebKitGTK (\d+\.\d+) \(Safari's engine\)$/,
};
/** The version the engine reports, to the README's precision. */
const TESTED: Record<EngineName, RegExp> = {
  chromium: /Chrome\/(\d+)\./,
  firefox: /^firefox\/(\d+)\./,
  webkit: /^WebKitGTK (\d+\.\d+)\./,
};

const rows = table.map((line) =>
  line
    .split('|')
    .slice(1, -1)
    .map((cell) => cell.trim()),
);

it('has a row for each engine, every feature marked supported', () => {
  expect(rows.map(([name]) => Object.keys(NAMES).find((engine) => NAMES[engine as EngineName].test(name!)))).toEqual([
    'chromium',
    'firefox',
    'webkit',
  ]);
  for (const [, ...features] of rows) for (const feature of features) expect(feature).toMatch(/^✓/);
});

describe.each(availableEngines())('%s', (engine) => {
  it('its row names the version the specs run in', async () => {
    const page = await launch(engine);
    const reported = await page.version().finally(() => page.close());
    const row = rows.find(([name]) => NAMES[engine].test(name!))!;
    expect(NAMES[engine].exec(row[0]!)![1]).toBe(TESTED[engine].exec(reported)?.[1]);
  });
});
