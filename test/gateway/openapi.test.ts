/**
 * The gateway's OpenAPI 3.1 document (src/gateway/openapi.json): valid by a real validator,
 * and held to the kit's lists of codes (src/server/errors.ts, src/server/net/http.ts, the order
 * token's and the gateway's routes' own), so that a code added to the kit without a line in
 * the document, or a documented code the kit no longer has, fails here.
 * test/gateway/openapi.emulator.test.ts holds the document to the running gateway's answers.
 */
import { ORDER_ALREADY_CHECKED } from '../../src/gateway/order-claim.js';
import { readdirSync, readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { deliver } from '../../src/browser/deliver.js';
import * as errors from '../../src/server/errors.js';
import * as http from '../../src/server/net/http.js';
import { ORDER_TOKEN_CODES } from '../../src/gateway/order-token.js';
import { codesOf, documentedCodes, gatewayRouteCodes, OPENAPI, type Operation } from '../support/openapi.js';

/**
 * The kit's codes that no route of the gateway answers, and why: they are told to the log
 * (onError) only, or belong to a feature the gateway does not turn on.
 */
const NOT_ANSWERED: Record<string, string> = {
  [errors.ERR_WORKFLOW_EXPIRED]: 'an expired execution: its decision webhook says so (status, decision null)',
  [errors.ERR_RESULT_NOT_READY]: 'a status read too early: the callback decides, logged',
  [errors.ERR_RESULT_UNDELIVERED]: 'onResult given up after retryForMs, logged',
  [errors.ERR_CALLBACK_REFUSED]: "the log's name for a refused callback; the answer carries the refusal's own code",
  [errors.ERR_UNKNOWN_EXECUTION]: "another tenant's callback, logged after its 200",
  [errors.ERR_RESULT_HANDLER_TIMEOUT]: 'onResult too slow, logged and retried',
  [errors.ERR_BACKLOG_BEHIND]: 'the queue cannot drain within the trust bound, logged',
  [errors.ERR_NOT_CHECKED]:
    'logged; the shop is told by the device_risk.failed webhook, whose FailureCode lists the reasons',
  misdirected_request: "the admin listener's, not in this document of the public routes (docs/gateway.md)",
  admin_unauthorized: "the admin listener's, not in this document of the public routes (docs/gateway.md)",
  [errors.ERR_NONCE_MISSING]: 'capture nonces: the gateway does not use them',
  [errors.ERR_NONCE_INVALID]: 'capture nonces: the gateway does not use them',
  [errors.ERR_NONCE_EXPIRED]: 'capture nonces: the gateway does not use them',
  [errors.ERR_NONCE_REUSED]: 'capture nonces: the gateway does not use them',
};

/** Every code the kit has: the DeviceRiskError codes, the handlers' refusals, the order token's, the gateway routes'. */
function kitCodes(): Set<string> {
  const constants = (module: Record<string, unknown>, prefix: string) =>
    Object.entries(module)
      .filter(([name, value]) => name.startsWith(prefix) && typeof value === 'string')
      .map(([, value]) => value as string);
  return new Set([
    ...constants(errors, 'ERR_'),
    ...constants(http, 'REFUSED_'),
    ...ORDER_TOKEN_CODES,
    ORDER_ALREADY_CHECKED,
    ...gatewayRouteCodes(),
  ]);
}

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1, by @seriousme/openapi-schema-validator', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(OPENAPI) as unknown as Record<string, unknown>);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('finds a broken document: the validation is not vacuous', async () => {
    const broken = structuredClone(OPENAPI) as { paths: Record<string, Record<string, { responses?: unknown }>> };
    delete broken.paths['/healthz']!.get!.responses;
    broken.paths['/healthz']!.get!.responses = { 200: { content: {} } }; // no description
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it("names every code the kit answers, and only those: the kit's lists and the document cannot drift", () => {
    const documented = documentedCodes();
    const kit = kitCodes();
    const told = Object.keys(NOT_ANSWERED);
    expect(told.filter((code) => !kit.has(code))).toEqual([]);
    expect(told.filter((code) => documented.has(code))).toEqual([]);
    // A kit code in neither list, or a documented code the kit lacks.
    expect([...kit].filter((code) => !documented.has(code) && !told.includes(code)).sort()).toEqual([]);
    expect([...documented].filter((code) => !kit.has(code)).sort()).toEqual([]);
  });

  it('gives each code only statuses its route documents, and each error status a code', () => {
    const operations: [string, Operation, string][] = [
      ['/device-risk', OPENAPI.paths['/device-risk']!.post!, 'CheckoutCode'],
      ['/callback', OPENAPI.paths['/callback']!.post!, 'CallbackCode'],
      [
        '/decisions/{customerInternalReference}',
        OPENAPI.paths['/decisions/{customerInternalReference}']!.get!,
        'DecisionsCode',
      ],
    ];
    for (const [path, operation, schema] of operations) {
      const statuses = Object.keys(operation.responses);
      const codes = codesOf(schema);
      for (const { const: code, 'x-status': of } of codes)
        expect(
          of.filter((status) => !statuses.includes(String(status))),
          `${path} ${code}`,
        ).toEqual([]);
      for (const status of statuses.filter((status) => Number(status) >= 400))
        expect(
          codes.some((code) => code['x-status'].includes(Number(status))),
          `${path} ${status}`,
        ).toBe(true);
    }
  });

  it('has Retry-After exactly where the browser package waits for it: 409, 429, 502 and 503', () => {
    const responses = OPENAPI.paths['/device-risk']!.post!.responses;
    const withRetryAfter = Object.keys(responses).filter((status) => responses[status]!.headers?.['Retry-After']);
    expect(withRetryAfter.sort()).toEqual(['409', '429', '502', '503']);
  });

  it('says which answers the browser package posts again after, as its delivery does (x-browser-retries)', async () => {
    const responses = OPENAPI.paths['/device-risk']!.post!.responses;
    const outcome = { outcome: 'complete' as const, scripts: [], durationMs: 1 };
    for (const [status, response] of Object.entries(responses).filter(([status]) => Number(status) >= 400)) {
      let calls = 0;
      const answer = () => {
        calls++;
        return Promise.resolve(new Response('{}', { status: Number(status), headers: { 'retry-after': '0' } }));
      };
      await deliver('0400abc', { url: 'https://shop.test/device-risk', fetch: answer, maxAttempts: 2 }, outcome).catch(
        () => undefined,
      );
      expect({ status, retried: calls === 2 }).toEqual({ status, retried: response['x-browser-retries'] });
    }
  });

  it('is the file the gateway serves and the build copies', () => {
    expect(readdirSync(new URL('../../src/gateway/', import.meta.url))).toContain('openapi.json');
    expect(JSON.parse(readFileSync(new URL('../../src/gateway/openapi.json', import.meta.url), 'utf8'))).toEqual(
      OPENAPI,
    );
  });
});
