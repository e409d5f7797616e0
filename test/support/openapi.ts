/**
 * The gateway's OpenAPI document (src/gateway/openapi.json) as the tests read it: its
 * operations, its lists of codes, and a check of an answer against what it documents
 * (JSON Schema 2020-12 by Ajv, the validator @seriousme/openapi-schema-validator is built on).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';

export interface Operation {
  parameters?: { name: string; in: string; required?: boolean; schema: object }[];
  responses: Record<
    string,
    {
      description: string;
      headers?: Record<string, unknown>;
      content?: Record<string, { schema: object }>;
      /** Whether the browser package posts again after this answer (POST /device-risk). */
      'x-browser-retries'?: boolean;
    }
  >;
}
export interface CodeEntry {
  const: string;
  description: string;
  'x-status': number[];
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<
    string,
    Record<string, Operation & { requestBody: { content: Record<string, { schema: object }> } }>
  >;
  components: { schemas: Record<string, { oneOf?: CodeEntry[] }> };
}

const GATEWAY = new URL('../../src/gateway/', import.meta.url);
export const OPENAPI = JSON.parse(readFileSync(new URL('openapi.json', GATEWAY), 'utf8')) as Document;

/** The entries of one of the document's code lists (CheckoutCode, CallbackCode, DecisionsCode). */
export const codesOf = (schema: string): CodeEntry[] => OPENAPI.components.schemas[schema]!.oneOf!;

/** Every code the document names, on any route. */
export const documentedCodes = () =>
  new Set(['CheckoutCode', 'CallbackCode', 'DecisionsCode'].flatMap((schema) => codesOf(schema).map((c) => c.const)));

/**
 * The codes the gateway's own routes answer (src/gateway/*.ts: `refusal(401, 'code')`,
 * `error(404, 'code')`), read from their source, so that a new one there is seen.
 */
export function gatewayRouteCodes(): string[] {
  const codes = new Set<string>();
  for (const file of readdirSync(GATEWAY).filter((name) => name.endsWith('.ts'))) {
    const source = readFileSync(new URL(file, GATEWAY), 'utf8');
    for (const [, code] of source.matchAll(/\b(?:refusal|error)\(\d{3}, '([a-z_]+)'/g)) codes.add(code!);
  }
  return [...codes];
}

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema(OPENAPI as object, 'openapi.json');

/** The JSON pointer of a document's path, with `~` and `/` escaped. */
const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/**
 * What is wrong with an answer of `method path`, as the document describes it: an
 * undocumented status, a body off its schema, a missing header, a code off its status.
 * Empty when it is as documented.
 */
export async function offDocument(path: string, method: string, response: Response): Promise<string[]> {
  const operation = OPENAPI.paths[path]?.[method];
  if (!operation) return [`${method} ${path} is not documented`];
  const status = String(response.status);
  const documented = operation.responses[status] ?? operation.responses[`${status[0]}XX`];
  if (!documented) return [`${method} ${path} answered ${status}, which is not documented`];
  const problems: string[] = [];
  for (const header of Object.keys(documented.headers ?? {}))
    if (!response.headers.has(header)) problems.push(`${status} lacks ${header}`);
  const media = documented.content?.['application/json'];
  if (media) {
    const body: unknown = await response.json();
    const ref = `openapi.json#/${pointer('paths', path, method, 'responses', operation.responses[status] ? status : `${status[0]}XX`, 'content', 'application/json', 'schema')}`;
    const validate = ajv.getSchema(ref)!;
    if (!validate(body)) problems.push(`${status} body ${JSON.stringify(body)}: ${ajv.errorsText(validate.errors)}`);
    const code = (body as { error?: { code?: string } }).error?.code;
    if (code !== undefined) {
      const entry = ['CheckoutCode', 'CallbackCode', 'DecisionsCode']
        .flatMap(codesOf)
        .find((candidate) => candidate.const === code);
      if (!entry?.['x-status'].includes(response.status)) problems.push(`${code} is not documented with ${status}`);
    }
  }
  return problems;
}

/** Whether `body` is a webhook's body (`decision`, or `failed`), as the document's `webhooks` describe it. */
export function offWebhook(body: unknown, webhook: 'decision' | 'failed' = 'decision'): string[] {
  const validate = ajv.getSchema(
    `openapi.json#/${pointer('webhooks', webhook, 'post', 'requestBody', 'content', 'application/json', 'schema')}`,
  )!;
  return validate(body) ? [] : [ajv.errorsText(validate.errors)];
}
