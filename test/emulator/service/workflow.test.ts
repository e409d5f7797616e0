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
