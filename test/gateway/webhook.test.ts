import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  decisionEvent,
  eventWebhookId,
  failureEvent,
  failureOf,
  signWebhook,
  webhookId,
  type FailureEvent,
} from '../../src/gateway/webhook.js';
import {
  DeviceRiskError,
  NotCheckedError,
  ResultUndeliveredError,
  type DeviceRiskDetails,
} from '../../src/server/index.js';
import { offWebhook } from '../support/openapi.js';
import { snippet } from '../support/readme.js';

const KEY = new Uint8Array(32).map((_, i) => i);
const SECRET = `whsec_${Buffer.from(KEY).toString('base64')}`;
const IDS = { accountId: 'acc-1', workflowExecutionId: 'EXEC-1', status: 'PROCESSED' as const };
const DETAILS = {
  ...IDS,
  customerInternalReference: 'order-9',
  userReference: 'kit-tag',
  decision: { type: 'REJECTED', label: 'HIGH_RISK', score: 96 },
  deviceRisk: undefined,
  raw: {},
} satisfies DeviceRiskDetails;

describe('the decision webhook', () => {
  it('is signed as Standard Webhooks say: the standardwebhooks library verifies it', async () => {
    const body = JSON.stringify(decisionEvent(IDS, {}, DETAILS, 0));
    const now = Math.floor(Date.now() / 1000);
    const headers = await signWebhook(KEY, webhookId(IDS.workflowExecutionId), now, body);
    expect(new Webhook(SECRET).verify(body, headers)).toEqual(JSON.parse(body));
    // Another key, a changed body or another id: refused.
    expect(() => new Webhook(`whsec_${Buffer.alloc(32).toString('base64')}`).verify(body, headers)).toThrow();
    expect(() => new Webhook(SECRET).verify(body.replace('REJECTED', 'PASSED'), headers)).toThrow();
    expect(() => new Webhook(SECRET).verify(body, { ...headers, 'webhook-id': 'msg_other' })).toThrow();
  });

  it('signs "id.timestamp.body" with HMAC-SHA256, base64, after v1,', async () => {
    const headers = await signWebhook(KEY, 'msg_1', 1700000000, '{}');
    expect(headers).toEqual({
      'webhook-id': 'msg_1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': `v1,${createHmac('sha256', KEY).update('msg_1.1700000000.{}').digest('base64')}`,
    });
  });

  it('carries the order, the execution and its decision', () => {
    expect(decisionEvent(IDS, { customerInternalReference: 'order-9', userReference: 'user-3' }, DETAILS, 0)).toEqual({
      type: 'device_risk.decision',
      timestamp: '1970-01-01T00:00:00.000Z',
      data: {
        customerInternalReference: 'order-9',
        userReference: 'user-3',
        workflowExecutionId: 'EXEC-1',
        accountId: 'acc-1',
        status: 'PROCESSED',
        decision: { type: 'REJECTED', label: 'HIGH_RISK', score: 96 },
      },
    });
  });

  it("takes the order from the details, never the kit's reference tag as userReference", () => {
    const { data } = decisionEvent(IDS, {}, DETAILS, 0);
    expect(data.customerInternalReference).toBe('order-9');
    expect(data.userReference).toBeNull();
  });

  it('tells an expired execution with no decision', () => {
    const expired = { ...IDS, status: 'SESSION_EXPIRED' as const };
    expect(decisionEvent(expired, { customerInternalReference: 'order-9' }, undefined, 0).data).toMatchObject({
      status: 'SESSION_EXPIRED',
      decision: null,
      customerInternalReference: 'order-9',
    });
  });

  it('has one id per execution, whatever the case of its UUID', () => {
    expect(webhookId('ABC-def')).toBe(webhookId('abc-DEF'));
    expect(webhookId('a')).not.toBe(webhookId('b'));
  });

  it("is what docs/gateway.md shows ('gateway-webhook-body')", () => {
    const shown = JSON.parse(snippet('gateway-webhook-body').code) as ReturnType<typeof decisionEvent>;
    const { data } = shown;
    const made = decisionEvent(
      { accountId: data.accountId, workflowExecutionId: data.workflowExecutionId, status: 'PROCESSED' },
      { customerInternalReference: data.customerInternalReference!, userReference: data.userReference! },
      { ...DETAILS, decision: { type: 'REJECTED', label: 'HIGH_RISK', score: 96 } },
      Date.parse(shown.timestamp),
    );
    expect(made).toEqual(shown);
  });

  it("tells a checkout never checked as docs/gateway.md shows ('gateway-failure-body'), one id per order", () => {
    const shown = JSON.parse(snippet('gateway-failure-body').code) as FailureEvent;
    const made = failureEvent(
      { customerInternalReference: 'order-1002', reason: 'blackbox_stale', lastError: 'token_rejected' },
      Date.parse(shown.timestamp),
    );
    expect(made).toEqual(shown);
    expect(offWebhook(made, 'failed')).toEqual([]);
    const again = failureEvent({ customerInternalReference: 'order-1002', reason: 'request_rejected' }, 0);
    expect(eventWebhookId(again)).toBe(eventWebhookId(made));
    expect(eventWebhookId(failureEvent({ customerInternalReference: 'order-1003', reason: 'x' }, 0))).not.toBe(
      eventWebhookId(made),
    );
    // The order's reference is not readable in the id (it is a digest).
    expect(eventWebhookId(made)).not.toContain('1002');
  });

  it("is what the kit's failures tell: a checkout never checked, a decision given up for its order, nothing else", () => {
    const never = new NotCheckedError(
      {
        key: 'key-1',
        fingerprint: 'f',
        blackbox: 'b',
        customer: { customerInternalReference: 'order-1' },
        acceptedAt: 0,
      },
      'request_rejected',
    );
    expect(failureOf(never, 0)).toEqual(failureEvent(never, 0));
    const undelivered = new ResultUndeliveredError('given up', 'exec-1', 'PROCESSED', {
      customerInternalReference: 'order-2',
      userReference: 'user-2',
    });
    const told = failureOf(undelivered, 0);
    expect(told).toEqual(
      failureEvent({ customerInternalReference: 'order-2', userReference: 'user-2', reason: 'result_undelivered' }, 0),
    );
    expect(offWebhook(told, 'failed')).toEqual([]);
    expect(
      failureOf(
        new ResultUndeliveredError('given up', 'exec-1', 'PROCESSED', { customerInternalReference: 'order-3' }),
        0,
      )?.data,
    ).toMatchObject({ customerInternalReference: 'order-3', userReference: null, code: 'result_undelivered' });
    // An execution no check of this tenant remembered names no order: nothing to tell.
    expect(failureOf(new ResultUndeliveredError('given up', 'exec-1', 'PROCESSED'), 0)).toBeUndefined();
    expect(failureOf(new DeviceRiskError('store_unavailable', 'away'), 0)).toBeUndefined();
  });
});
