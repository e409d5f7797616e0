// The generated lists of docs/ and src/gateway/openapi.json (scripts/reference-docs.mjs): each
// committed block is what the code's tables make, so that a list edited by hand, or a table
// changed without re-running the command, fails here with the command to run.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { referenceBlocks } from '../../scripts/reference-blocks.js';
import { CALLBACK_CODES, CHECKOUT_CODES, DECISIONS_CODES, type CodeAnswer } from '../../src/gateway/answers.js';
import { REGION_NAMES, REGIONS } from '../../src/server/api/regions.js';
import { METRICS, prometheusName, type MetricDefinition } from '../../src/server/status/names.js';
// @ts-expect-error -- a command's module, without types
import { blocksIn, COMMAND, rewrite, staleBlocks, valueAt } from '../../scripts/reference-docs.mjs';

const FILES = referenceBlocks();
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('the generated lists', () => {
  it(`every committed block is what the code says (else: ${COMMAND})`, () => {
    // Each stale place on its own line of the failure, then the command that rewrites them.
    expect(staleBlocks(FILES).join('\n'), `run ${COMMAND}`).toBe('');
  });

  it('fails on a row edited by hand, one removed, and a JSON list edited', () => {
    const server = read('docs/server.md');
    const edited = server.replace('| `maxBodyBytes` | `16384` |', '| `maxBodyBytes` | `32768` |');
    expect(edited).not.toBe(server);
    const removed = server.replace('| `resultWaitMs` | `0` |\n', '');
    expect(removed).not.toBe(server);
    const openapi = JSON.parse(read('src/gateway/openapi.json')) as Record<string, unknown>;
    const kinds = valueAt(
      openapi,
      '/components/schemas/Checkout/properties/outcome/properties/outcome/enum',
    ) as string[];
    kinds.pop();
    const texts: Record<string, string> = { 'src/gateway/openapi.json': JSON.stringify(openapi) };
    for (const text of [edited, removed]) {
      texts['docs/server.md'] = text;
      const files = {
        'docs/server.md': FILES['docs/server.md']!,
        'src/gateway/openapi.json': FILES['src/gateway/openapi.json']!,
      };
      expect(staleBlocks(files, (path: string) => texts[path])).toEqual([
        'docs/server.md: block options-endpoint is not what the code says',
        'src/gateway/openapi.json: /components/schemas/Checkout/properties/outcome/properties/outcome/enum is not what the code says',
      ]);
    }
  });

  it('names a block the code makes and no doc holds', () => {
    const files = { 'docs/server.md': { 'options-nowhere': '| x |' } };
    expect(staleBlocks(files)).toEqual([
      `docs/server.md: no block options-nowhere (<!-- generated: options-nowhere (${COMMAND}) --> … <!-- /generated: options-nowhere -->)`,
    ]);
  });

  it('every block in docs/ has a generator: none is left behind by hand', () => {
    // The size figures need a build (test/package/size-budget.test.ts holds them); the
    // mutation scores a Stryker run (npm run mutation:table writes them, with these markers).
    const elsewhere: Record<string, string[]> = {
      'docs/performance.md': ['size-figures'],
      'docs/mutation.md': ['mutation-table'],
    };
    for (const name of readdirSync(new URL('../../docs/', import.meta.url)).filter((file) => file.endsWith('.md'))) {
      const path = `docs/${name}`;
      const made = [...Object.keys(FILES[path] ?? {}), ...(elsewhere[path] ?? [])];
      expect([path, Object.keys(blocksIn(read(path))).filter((block) => !made.includes(block))]).toEqual([path, []]);
    }
  });

  it('rewrites a block between its markers and nothing else; refuses a broken marker', () => {
    const text = `a\n<!-- generated: x (${COMMAND}) -->\n| old |\n<!-- /generated: x -->\nb\n`;
    expect(rewrite(text, { x: '| new |' })).toBe(text.replace('| old |', '| new |'));
    const two = `${text}<!-- generated: y (npm run other) -->\n| y |\n<!-- /generated: y -->\n`;
    expect(rewrite(two, { x: '| a |\n| b |', y: '| c |' })).toBe(
      two.replace('| old |', '| a |\n| b |').replace('| y |', '| c |'),
    );
    expect(() => blocksIn('<!-- generated: x -->\n<!-- /generated: x -->')).toThrow(/must name its command/);
    expect(() => blocksIn(`<!-- generated: x (${COMMAND}) -->\n`)).toThrow(/never closed/);
    expect(() => rewrite(text, { y: '' })).toThrow(/no block y/);
  });

  it('no doc lists the regions by hand: a new region changes the generated blocks only', () => {
    const names = [...REGION_NAMES, ...Object.values(REGIONS).map((region) => region.name)];
    const one = `\`?(?:${names.join('|')})\`?`;
    const list = new RegExp(`${one}(?:,\\s*|\\s+or\\s+|\\s+and\\s+|\\s*\\(\\s*)${one}`);
    expect(list.test('`US`, `EU` or `SG`') && list.test('amer-1 (US)') && !list.test('`US` only')).toBe(true);
    const docs = readdirSync(new URL('../../docs/', import.meta.url)).filter((file) => file.endsWith('.md'));
    const restated = ['README.md', 'CONTRIBUTING.md', ...docs.map((file) => `docs/${file}`)].filter((path) => {
      const text = read(path).replace(/<!-- generated: ([\w-]+)[^]*?<!-- \/generated: \1 -->/g, '');
      return list.test(text);
    });
    expect(restated, 'name the regions through a generated block (scripts/reference-blocks.ts)').toEqual([]);
  });

  it('every series a doc, an alert or the dashboard names is one of the metrics: a renamed metric fails here', () => {
    const known = new Set(
      Object.values(METRICS).flatMap((metric) => {
        const name = prometheusName(metric);
        return metric.kind === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
      }),
    );
    const docs = readdirSync(new URL('../../docs/', import.meta.url)).filter((file) => file.endsWith('.md'));
    const ops = ['ops/prometheus/alerts.yml', 'ops/prometheus/alerts.test.yml', 'ops/grafana/blackbox-capture.json'];
    const unknown = ['README.md', ...docs.map((file) => `docs/${file}`), ...ops].flatMap((path) =>
      [...read(path).matchAll(/\bblackbox_capture_[a-z_]+/g)]
        .map(([name]) => name)
        .filter((name) => !known.has(name))
        .map((name) => `${path}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it("every label value a doc, an alert or the dashboard names is in its metric's list: a renamed value fails here", () => {
    const metricOf = new Map(
      Object.values(METRICS).flatMap((metric: MetricDefinition) => {
        const name = prometheusName(metric);
        return [name, `${name}_bucket`, `${name}_sum`, `${name}_count`].map((series) => [series, metric] as const);
      }),
    );
    const docs = readdirSync(new URL('../../docs/', import.meta.url)).filter((file) => file.endsWith('.md'));
    const ops = ['ops/prometheus/alerts.yml', 'ops/prometheus/alerts.test.yml', 'ops/grafana/blackbox-capture.json'];
    const named = ['README.md', ...docs.map((file) => `docs/${file}`), ...ops].flatMap((path) =>
      // A selector's exact matches, `label="value"` (quotes escaped in the dashboard's JSON).
      [...read(path).matchAll(/\b(blackbox_capture_[a-z_]+)\{([^}]*)\}/g)].flatMap(([, series, selector]) =>
        [...selector!.matchAll(/(\w+)=\\?"([^"\\]*)\\?"/g)].map(([, label, value]) => ({
          path,
          series: series!,
          label: label!,
          value: value!,
        })),
      ),
    );
    // The check reads something: the stale-drop alert names its event.
    expect(named).toContainEqual(
      expect.objectContaining({ series: 'blackbox_capture_queue_checks_total', value: 'stale' }),
    );
    const unlisted = named
      .filter(({ series, label, value }) => {
        const values = metricOf.get(series)?.values?.[label];
        return values !== undefined && !values.includes(value);
      })
      .map(({ path, series, label, value }) => `${path}: ${series}{${label}="${value}"}`);
    expect(unlisted).toEqual([]);
  });

  it("the OpenAPI document's answers name the codes that come with their status (or end their list with …)", () => {
    const openapi = JSON.parse(read('src/gateway/openapi.json')) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    const routes: Array<[string, string, readonly CodeAnswer[]]> = [
      ['/device-risk', 'post', CHECKOUT_CODES],
      ['/callback', 'post', CALLBACK_CODES],
      ['/decisions/{customerInternalReference}', 'get', DECISIONS_CODES],
    ];
    const unnamed = routes.flatMap(([path, method, answers]) =>
      Object.entries(openapi.paths[path]![method]!.responses).flatMap(([status, { description }]) =>
        answers
          .filter((answer) => answer.status?.includes(Number(status)) && !description.includes(answer.code))
          .filter(() => !description.includes('…'))
          .map((answer) => `${path} ${status}: ${answer.code}`),
      ),
    );
    expect(unnamed).toEqual([]);
  });
});
