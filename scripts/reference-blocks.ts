/**
 * The reference lists of docs/ and src/gateway/openapi.json, as the code's own tables make
 * them: `node scripts/reference-docs.mjs --write` writes them, and
 * test/scripts/reference-docs.test.ts fails when a committed one differs. Each list is
 * written here from its table and nowhere by hand (CONTRIBUTING.md#generated-lists).
 */
import {
  CALLBACK_CODES,
  CHECKOUT_CODES,
  DECISIONS_CODES,
  describeAnswer,
  FAILURE_CODES,
  type CodeAnswer,
} from '../src/gateway/answers.js';
import { ORDER_TOKEN_CODES } from '../src/gateway/order-token.js';
import { VARIABLES } from '../src/gateway/settings.js';
import { REGION_NAMES, REGIONS, regionOrigin, type HostRole } from '../src/server/api/regions.js';
import { CLIENT_OPTIONS, TOKEN_SOURCE_OPTIONS } from '../src/server/api/settings.js';
import { CALLBACK_OPTIONS } from '../src/server/callbacks/settings.js';
import { OUTCOMES } from '../src/server/endpoint/outcome.js';
import { ENDPOINT_OPTIONS } from '../src/server/endpoint/settings.js';
import { REQUIRED, type OptionDefault, type OptionRow } from '../src/server/options-table.js';
import { METRICS, prometheusName, type MetricDefinition } from '../src/server/status/names.js';
import { PROXY_OPTIONS } from '../src/server/proxy/settings.js';
import { BULLMQ_QUEUE_OPTIONS, FILE_QUEUE_OPTIONS, MEMORY_QUEUE_OPTIONS } from '../src/server/queue/settings.js';
import { MEMORY_STORE_OPTIONS, REDIS_STORE_OPTIONS } from '../src/server/store/settings.js';
import {
  METRICS_HANDLER_OPTIONS,
  STATUS_HANDLER_OPTIONS,
  STATUS_MONITOR_OPTIONS,
} from '../src/server/status/settings.js';

/** A file's generated places: a markdown block's lines by its name, a JSON value by its pointer. */
type ReferenceFiles = Record<string, Record<string, unknown>>;

/** A markdown table of `rows` under `head`; a `|` in a cell is escaped. */
const table = (head: readonly string[], rows: readonly (readonly string[])[]): string => {
  const line = (cells: readonly string[]) => `| ${cells.map((cell) => cell.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(line)].join('\n');
};

/** Each factory's options table (docs/server.md#options), by its block's name. */
export const OPTION_TABLES: Record<string, Record<string, OptionRow>> = {
  'options-endpoint': ENDPOINT_OPTIONS,
  'options-callbacks': CALLBACK_OPTIONS,
  'options-client': CLIENT_OPTIONS,
  'options-token-source': TOKEN_SOURCE_OPTIONS,
  'options-proxy': PROXY_OPTIONS,
  'options-memory-queue': MEMORY_QUEUE_OPTIONS,
  'options-memory-store': MEMORY_STORE_OPTIONS,
  'options-file-queue': FILE_QUEUE_OPTIONS,
  'options-bullmq-queue': BULLMQ_QUEUE_OPTIONS,
  'options-redis-store': REDIS_STORE_OPTIONS,
  'options-status-monitor': STATUS_MONITOR_OPTIONS,
  'options-metrics-handler': METRICS_HANDLER_OPTIONS,
  'options-status-handler': STATUS_HANDLER_OPTIONS,
};

/** A default as the docs write it: a value in code type, a sentence as it is. */
function defaultText(value: OptionDefault): string {
  if (value === REQUIRED) return '**required**';
  if (typeof value === 'string') return value;
  if (typeof value === 'object')
    return `\`{ ${Object.entries(value)
      .map(([key, n]) => `${key}: ${n}`)
      .join(', ')} }\``;
  return `\`${value}\``;
}

/** One factory's options: each option with its default, in the table's order. */
const optionsTable = (options: Record<string, OptionRow>): string =>
  table(
    ['Option', 'Default'],
    Object.entries(options).map(([name, row]) => [`\`${name}\``, defaultText(row.default)]),
  );

/** The roles of docs/vendor-contract.md#hosts-by-role, in its order. */
const ROLES: readonly HostRole[] = ['auth', 'account', 'api', 'retrieval', 'callback'];

/** Each region with its hosts and the sources of its callbacks (src/server/api/regions.ts). */
const regionsTable = (): string =>
  table(
    ['`region`', "the service's name", 'hosts', 'callbacks come from'],
    REGION_NAMES.map((region) => [
      `\`${region}\``,
      `\`${REGIONS[region].name}\``,
      ROLES.map((role) => `\`${new URL(regionOrigin(region, role)).host}\``).join(', '),
      REGIONS[region].callbackSources.map((source) => `\`${source}\``).join(', '),
    ]),
  );

/** The gateway's environment variables (src/gateway/settings.ts), as docs/gateway.md lists them. */
const variablesTable = (): string =>
  table(
    ['variable', 'setting', 'default', 'what it is', 'secret'],
    Object.entries(VARIABLES).map(([name, row]: [string, (typeof VARIABLES)[keyof typeof VARIABLES]]) => {
      const fallback =
        'required' in row
          ? '**required**'
          : 'default' in row
            ? `\`${row.default}\``
            : 'unset' in row
              ? row.unset
              : 'none';
      const more = 'docs' in row ? ` (${row.docs})` : '';
      return [
        `\`${name}\``,
        `\`${row.setting}\``,
        fallback,
        `${row.meaning}${more}`,
        row.kind === 'secret' ? 'yes: never printed' : 'no',
      ];
    }),
  );

const UNITS = { ms: 'milliseconds', s: 'seconds' } as const;

/** Metrics as docs/operating.md and docs/gateway.md list them (src/server/status/names.ts). */
const metricsTable = (metrics: readonly MetricDefinition[]): string =>
  table(
    ['Prometheus series', 'OpenTelemetry instrument', 'kind', 'labels', 'what'],
    metrics.map((metric) => [
      metric.kind === 'histogram' ? '— (OpenTelemetry only)' : `\`${prometheusName(metric)}\``,
      `\`${metric.name}\``,
      metric.unit ? `${metric.kind}, ${UNITS[metric.unit]}` : metric.kind,
      metric.labels.map((label) => `\`${label}\``).join(', ') || '—',
      metric.help,
    ]),
  );

const gateways = (metric: MetricDefinition) => metric.name.startsWith('blackbox_capture.gateway.');

/** A code list of the OpenAPI document: `oneOf` its codes, each with its description and statuses. */
const schemaOf = (answers: readonly CodeAnswer[]) =>
  answers.map((answer) => ({
    const: answer.code,
    description: describeAnswer(answer),
    ...(answer.status ? { 'x-status': answer.status } : {}),
  }));

/** The routes' codes as docs/gateway.md lists them: route, code, statuses, meaning. */
const ROUTES: Array<[string, readonly CodeAnswer[]]> = [
  ['`POST /device-risk`', CHECKOUT_CODES],
  ['`POST /callback`', CALLBACK_CODES],
  ['`GET /decisions/{…}`', DECISIONS_CODES],
];

const statusText = (answer: CodeAnswer) => answer.status?.join(', ') ?? '—';

const codesTable = (): string =>
  table(
    ['route', 'code', 'HTTP', 'what it means'],
    ROUTES.flatMap(([route, answers]) =>
      answers.map((answer) => [route, `\`${answer.code}\``, statusText(answer), describeAnswer(answer)]),
    ),
  );

const orderTokenTable = (): string =>
  table(
    ['code', 'HTTP', 'when'],
    ORDER_TOKEN_CODES.map((code) => {
      const answer = CHECKOUT_CODES.find((entry) => entry.code === code);
      if (!answer) throw new Error(`src/gateway/answers.ts has no answer ${code}`);
      return [`\`${code}\``, statusText(answer), describeAnswer(answer)];
    }),
  );

const failureTable = (): string =>
  table(
    ['`code`', 'when'],
    FAILURE_CODES.map((answer) => [`\`${answer.code}\``, describeAnswer(answer)]),
  );

/** Every generated place, by file. */
export function referenceBlocks(): ReferenceFiles {
  return {
    'docs/server.md': Object.fromEntries(
      Object.entries(OPTION_TABLES).map(([name, options]) => [name, optionsTable(options)]),
    ),
    'docs/browser.md': {
      outcomes: table(
        ['outcome', 'meaning', 'what to look at'],
        Object.entries(OUTCOMES).map(([kind, { meaning, lookAt }]) => [`\`${kind}\``, meaning, lookAt]),
      ),
    },
    'docs/vendor-contract.md': { regions: regionsTable() },
    'docs/gateway.md': {
      variables: variablesTable(),
      metrics: metricsTable(Object.values(METRICS).filter(gateways)),
      codes: codesTable(),
      'order-token-codes': orderTokenTable(),
      'failure-codes': failureTable(),
    },
    'docs/operating.md': { metrics: metricsTable(Object.values(METRICS).filter((metric) => !gateways(metric))) },
    'src/gateway/openapi.json': {
      '/components/schemas/Checkout/properties/outcome/properties/outcome/enum': Object.keys(OUTCOMES),
      '/components/schemas/CheckoutCode/oneOf': schemaOf(CHECKOUT_CODES),
      '/components/schemas/CallbackCode/oneOf': schemaOf(CALLBACK_CODES),
      '/components/schemas/DecisionsCode/oneOf': schemaOf(DECISIONS_CODES),
      '/components/schemas/FailureCode/oneOf': schemaOf(FAILURE_CODES),
    },
  };
}
