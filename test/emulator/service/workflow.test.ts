// The emulated workflow (src/emulator/service/workflow.ts): upload and finalize as
// docs/vendor-contract.md#the-service describes them, each refusal with the problem body that
// says why, and the decision the emulator makes of the blackbox finalized.
import { describe, expect, it } from 'vitest';
import { blackbox, setup } from '../../support/emulated-service.js';

const answer = async (response: Response) => [response.status, await response.json()];
const refusal = (status: number, title: string, detail: string) => [status, { title, status, detail }];

describe('upload', () => {
  it('answers the time of the upload, the account and the workflow execution', async () => {
    const { transaction, upload, advance } = setup();
    const tx = await transaction();
    advance(1234);
    expect(await answer(await upload(tx, 'AAAA'))).toEqual([
      200,
      {
        timestamp: new Date(Date.UTC(2026, 10, 21) + 1234).toISOString(),
        account: { id: tx.accountId },
        workflowExecution: { id: tx.executionId },
      },
    ]);
  });

  it('each refusal says why in its problem body', async () => {
    const { transaction, upload, call, advance } = setup();
    const tx = await transaction();
    const other = await transaction();
    const asTx = { authorization: `Bearer ${tx.token}` };
    expect(await answer(await call('PUT', tx.upload, { sessionId: 'AAAA' }, asTx))).toEqual(
      refusal(405, 'Method Not Allowed', 'Use POST'),
    );
    expect(await answer(await upload(tx, 'AAAA', { authorization: undefined }))).toEqual(
      refusal(401, 'Unauthorized', 'The transaction token is required'),
    );
    expect(
      await answer(await upload({ ...tx, upload: tx.upload.replace(tx.accountId, other.accountId) }, 'AAAA')),
    ).toEqual(refusal(404, 'Not Found', 'Unknown account or workflow execution'));
    expect(await answer(await upload({ ...tx, token: other.token }, 'AAAA'))).toEqual(
      refusal(403, 'Forbidden', 'The token does not belong to this transaction'),
    );
    expect(await answer(await upload({ ...tx, upload: tx.upload.replace('DEVICE_RISK', 'FRONT') }, 'AAAA'))).toEqual(
      refusal(404, 'Not Found', 'Unknown credential or part'),
    );
    expect(await answer(await call('POST', tx.upload, '{x', asTx))).toEqual(
      refusal(400, 'Bad Request', 'Body is not valid JSON'),
    );
    expect(await answer(await call('POST', tx.upload, 'null', asTx))).toEqual(
      refusal(400, 'Bad Request', 'sessionId is required and must be a non-empty string'),
    );
    expect(await answer(await upload(tx, ''))).toEqual(
      refusal(400, 'Bad Request', 'sessionId is required and must be a non-empty string'),
    );
    expect(await answer(await upload(tx, 'A'.repeat(8002)))).toEqual(
      refusal(400, 'Bad Request', 'sessionId is longer than 8001 characters'),
    );
    expect(await answer(await upload(tx, 'AA AA'))).toEqual(
      refusal(400, 'Bad Request', 'sessionId is not a blackbox (base64 characters expected)'),
    );
    advance(30 * 60_000);
    expect(await answer(await upload(tx, 'AAAA'))).toEqual(
      refusal(401, 'Unauthorized', 'The transaction token has expired'),
    );
  });

  it('the body is read up to 32 KiB', async () => {
    const { transaction, call } = setup();
    const tx = await transaction();
    const asTx = { authorization: `Bearer ${tx.token}` };
    const sized = (bytes: number) => {
      const body = JSON.stringify({ sessionId: 'AAAA', pad: '' });
      return JSON.stringify({ sessionId: 'AAAA', pad: 'x'.repeat(bytes - body.length) });
    };
    expect((await call('POST', tx.upload, sized(32 * 1024), asTx)).status).toBe(200);
    expect(await answer(await call('POST', tx.upload, sized(32 * 1024 + 1), asTx))).toEqual(
      refusal(400, 'Bad Request', 'Body larger than 32768 bytes'),
    );
  });
});

describe('finalize', () => {
  it('each refusal says why in its problem body', async () => {
    const { transaction, upload, finalize } = setup();
    const tx = await transaction();
    expect(await answer(await finalize(tx, { authorization: undefined }))).toEqual(
      refusal(401, 'Unauthorized', 'The transaction token is required'),
    );
    expect(await answer(await finalize(tx))).toEqual(refusal(409, 'Conflict', 'Nothing was uploaded yet'));
    await upload(tx, 'AAAA');
    expect((await finalize(tx)).status).toBe(200);
    expect(await answer(await finalize(tx))).toEqual(refusal(409, 'Conflict', 'The workflow execution is PROCESSED'));
    expect(await answer(await upload(tx, 'AAAA'))).toEqual(
      refusal(409, 'Conflict', 'The workflow execution is PROCESSED'),
    );
  });
});

describe('the decision (docs/vendor-contract.md#the-answer)', () => {
  async function decide(blackboxes: string[], prepare?: (s: ReturnType<typeof setup>) => void) {
    const s = setup();
    prepare?.(s);
    const tx = await s.transaction();
    for (const sessionId of blackboxes) expect((await s.upload(tx, sessionId)).status).toBe(200);
    await s.finalize(tx);
    return { decision: s.service.transactions().find((t) => t.workflowExecutionId === tx.executionId)!.decision, tx };
  }

  it('the last blackbox uploaded decides', async () => {
    expect((await decide([blackbox(['fp_static', 'tp']), blackbox(['fp_static'])])).decision).toMatchObject({
      type: 'WARNING',
      alerts: ['Third-party collection missing (blocked)'],
    });
    expect((await decide([blackbox(['fp_static']), blackbox(['fp_static', 'tp'])])).decision?.type).toBe('PASSED');
  });

  it("any third-party source counts as the third party's collection, the dynamic one alone too", async () => {
    expect((await decide([blackbox(['fp_static', 'tp_dyn'])])).decision).toEqual({
      type: 'PASSED',
      label: 'OK',
      alerts: [],
      score: 8,
    });
    expect((await decide([blackbox(['fp_dyn', 'tp'])])).decision?.type).toBe('PASSED');
  });

  it('a decision forced for a workflow execution id decides that one, and stays', async () => {
    const rejected = { type: 'REJECTED', label: 'HIGH_RISK', score: 96 };
    const s = setup();
    const tx = await s.transaction();
    const other = await s.transaction();
    s.service.decide(tx.executionId, rejected);
    for (const t of [tx, other]) {
      await s.upload(t, blackbox(['fp_static', 'tp']));
      await s.finalize(t);
    }
    expect(s.service.transactions().map((t) => t.decision?.type)).toEqual(['REJECTED', 'PASSED']);
    const again = await s.transaction();
    s.service.decide(again.executionId, rejected);
    await s.upload(again, blackbox(['fp_static', 'tp']));
    await s.finalize(again);
    expect(s.service.transactions().at(-1)!.decision).toEqual(rejected);
  });
});

describe('Content-Type: application/json on every API call (docs/vendor-contract.md#every-call)', () => {
  const without = { 'content-type': undefined };
  const wrong = { 'content-type': 'text/plain' };
  const contentTypeRefusal = refusal(400, 'Bad Request', 'Content-Type must be application/json');

  it('account create and update, upload, finalize, status and details: 400 without it or with another', async () => {
    const s = setup();
    const tx = await s.transaction();
    await s.upload(tx, 'AAAA');
    const execution = `/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.executionId}`;
    for (const headers of [without, wrong]) {
      expect(await answer(await s.create(undefined, headers))).toEqual(contentTypeRefusal);
      expect(
        await answer(
          await s.call('PUT', `/api/v1/accounts/${tx.accountId}`, { customerInternalReference: 'o' }, headers),
        ),
      ).toEqual(contentTypeRefusal);
      expect(await answer(await s.upload(tx, 'AAAA', headers))).toEqual(contentTypeRefusal);
      expect(await answer(await s.finalize(tx, headers))).toEqual(contentTypeRefusal);
      expect(await answer(await s.call('GET', `${execution}/status`, undefined, headers))).toEqual(contentTypeRefusal);
      expect(await answer(await s.call('GET', execution, undefined, headers))).toEqual(contentTypeRefusal);
    }
    // With it, and with a charset: answered.
    expect((await s.call('GET', `${execution}/status`, undefined, { 'content-type': 'application/json' })).status).toBe(
      200,
    );
    expect((await s.finalize(tx, { 'content-type': 'application/json; charset=utf-8' })).status).toBe(200);
    expect((await s.call('GET', execution, undefined, { 'content-type': 'Application/JSON' })).status).toBe(200);
  });

  it('a type that only starts like it is refused', async () => {
    const s = setup();
    const tx = await s.transaction();
    expect(await answer(await s.upload(tx, 'AAAA', { 'content-type': 'application/json-patch+json' }))).toEqual(
      contentTypeRefusal,
    );
  });
});

describe('the part name of the Data credential', () => {
  it('prepared_data: the credential names its part prepared_data, its address PREPARED_DATA, and only that is taken', async () => {
    const s = setup({ workflows: { '10011': { deviceRisk: true, part: 'prepared_data' } } });
    const tx = await s.transaction();
    expect(Object.keys(tx.credential.api.parts)).toEqual(['prepared_data']);
    expect(tx.upload).toMatch(/\/credentials\/[0-9a-f-]{36}\/parts\/PREPARED_DATA$/);
    expect(s.service.transactions()[0]!.part).toBe('prepared_data');
    expect(
      await answer(await s.upload({ ...tx, upload: tx.upload.replace('PREPARED_DATA', 'DEVICE_RISK') }, 'AAAA')),
    ).toEqual(refusal(404, 'Not Found', 'Unknown credential or part'));
    expect((await s.upload(tx, 'AAAA')).status).toBe(200);
  });

  it('device_risk, the default: DEVICE_RISK only', async () => {
    const s = setup({ workflows: { '10011': { deviceRisk: true } } });
    const tx = await s.transaction();
    expect(Object.keys(tx.credential.api.parts)).toEqual(['device_risk']);
    expect(s.service.transactions()[0]!.part).toBe('device_risk');
    expect(
      await answer(await s.upload({ ...tx, upload: tx.upload.replace('DEVICE_RISK', 'PREPARED_DATA') }, 'AAAA')),
    ).toEqual(refusal(404, 'Not Found', 'Unknown credential or part'));
    expect((await s.upload(tx, 'AAAA')).status).toBe(200);
  });
});

describe('the risk score (docs/vendor-contract.md#the-answer)', () => {
  async function forced(decision: Parameters<ReturnType<typeof setup>['service']['decide']>[1]) {
    const s = setup();
    s.service.decide('next', decision);
    const tx = await s.transaction();
    await s.upload(tx, blackbox(['fp_static', 'tp']));
    await s.finalize(tx);
    return (await s.details(tx)) as { decision: unknown };
  }

  it.each([
    ['PASSED', 'OK', 10],
    ['WARNING', 'PARTIAL_COLLECTION', 50],
    ['REJECTED', 'HIGH_RISK', 90],
    ['NOT_EXECUTED', 'TECHNICAL_ERROR', -1],
    ['A_TYPE_FROM_TOMORROW', 'SOMETHING', 50],
  ])("a %s decision forced without a score gets its type's: %s %i", async (type, label, score) => {
    expect((await forced({ type, label })).decision).toEqual({ type, details: { label }, risk: { score } });
  });

  it('a forced score is kept', async () => {
    expect((await forced({ type: 'REJECTED', label: 'HIGH_RISK', score: 100 })).decision).toEqual({
      type: 'REJECTED',
      details: { label: 'HIGH_RISK' },
      risk: { score: 100 },
    });
    expect((await forced({ type: 'PASSED', label: 'OK', score: 0 })).decision).toMatchObject({ risk: { score: 0 } });
  });

  it.each([
    ['above 100', { type: 'REJECTED', label: 'HIGH_RISK', score: 101 }],
    ['below -1', { type: 'PASSED', label: 'OK', score: -2 }],
    ['not an integer', { type: 'WARNING', label: 'X', score: 12.5 }],
    ['-1 for another type than NOT_EXECUTED', { type: 'PASSED', label: 'OK', score: -1 }],
    ['other than -1 for NOT_EXECUTED', { type: 'NOT_EXECUTED', label: 'TECHNICAL_ERROR', score: 0 }],
  ])('a score the service never gives is refused when forced: %s', (_, decision) => {
    const s = setup();
    expect(() => s.service.decide('next', decision)).toThrow(RangeError);
  });
});
