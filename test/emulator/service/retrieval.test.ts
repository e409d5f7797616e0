// The emulated retrieval API (src/emulator/service/retrieval.ts): status and details as
// docs/vendor-contract.md#the-answer describes them, each refusal's problem body, and the
// device data of the details, what the emulator cannot know given as fixed local values.
import { describe, expect, it } from 'vitest';
import { blackbox, setup } from '../../support/emulated-service.js';

const answer = async (response: Response) => [response.status, await response.json()];
const refusal = (status: number, title: string, detail: string) => [status, { title, status, detail }];
const path = (tx: { accountId: string; executionId: string }) =>
  `/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.executionId}`;

describe('retrieval', () => {
  it('each refusal says why in its problem body', async () => {
    const { transaction, call } = setup();
    const tx = await transaction();
    const other = await transaction();
    const wrong = path({ accountId: other.accountId, executionId: tx.executionId });
    for (const at of [wrong, `${wrong}/status`]) {
      expect(await answer(await call('GET', at, undefined, {}, 'retrieval'))).toEqual(
        refusal(404, 'Not Found', 'Unknown account or workflow execution'),
      );
    }
    // Status and details are read on the retrieval host only: the API and account hosts know no such path.
    for (const host of ['api', 'account'] as const) {
      expect(await answer(await call('GET', `${path(tx)}/status`, undefined, {}, host))).toEqual(
        refusal(404, 'Not Found', 'Unknown path'),
      );
    }
    expect(await answer(await call('GET', path(tx), undefined, {}, 'api'))).toEqual(
      refusal(405, 'Method Not Allowed', 'Use PUT'),
    );
    expect(await answer(await call('GET', path(tx), undefined, {}, 'account'))).toEqual(
      refusal(404, 'Not Found', 'Unknown path'),
    );
    expect(await answer(await call('DELETE', path(tx), undefined, {}, 'retrieval'))).toEqual(
      refusal(405, 'Method Not Allowed', 'Use GET'),
    );
    expect(await answer(await call('GET', `${path(tx)}/other`, undefined, {}, 'retrieval'))).toEqual(
      refusal(404, 'Not Found', 'Unknown path'),
    );
    expect(await answer(await call('GET', path(tx), undefined, { authorization: undefined }, 'retrieval'))).toEqual(
      refusal(401, 'Unauthorized', 'A valid access token is required'),
    );
  });

  it('the device data: what the blackbox tells, and fixed local values for the rest', async () => {
    const s = setup();
    const tx = await s.transaction();
    await s.upload(tx, blackbox(['fp_static', 'fp_dyn', 'tp'], undefined, 'de-CH,de;q=0.9'));
    await s.finalize(tx);
    const details = (await (await s.call('GET', path(tx), undefined, {}, 'retrieval')).json()) as {
      createdAt: string;
      capabilities: { deviceRiskVerification: Array<{ data: unknown }> };
    };
    expect(details.capabilities.deviceRiskVerification[0]!.data).toEqual({
      deviceModel: 'Desktop',
      deviceOS: 'Windows',
      browser: 'Chrome',
      browserVersion: '156.0.0.0',
      browserLanguage: 'de-CH',
      browserTimezone: 'UTC',
      browserCookiesEnabled: true,
      deviceScreen: '1280x720',
      trueIP: '127.0.0.1',
      statedIp: '127.0.0.1',
      isp: 'Loopback',
      ipLocationCity: 'Localhost',
      ipLocationRegion: '',
      ipLocationCountry: 'ZZ',
      ipLocationLatitude: '0.00',
      ipLocationLongitude: '0.00',
      deviceFirstSeen: details.createdAt,
      deviceIsNew: true,
      metaDataAge: '0',
      deviceAlerts: [],
    });
  });

  it('a decision forced without alerts has none in the device data', async () => {
    const s = setup();
    s.service.decide('next', { type: 'WARNING', label: 'REVIEW' });
    const tx = await s.transaction();
    await s.upload(tx, blackbox(['fp_static']));
    await s.finalize(tx);
    const details = (await (await s.call('GET', path(tx), undefined, {}, 'retrieval')).json()) as {
      capabilities: { deviceRiskVerification: Array<{ data: { deviceAlerts: string[] } }> };
    };
    expect(details.capabilities.deviceRiskVerification[0]!.data.deviceAlerts).toEqual([]);
  });

  it('a workflow without Device Risk has no Device Risk credential in its details', async () => {
    const s = setup({ workflows: { '5': { deviceRisk: false } } });
    const created = (await (
      await s.create({ customerInternalReference: 'o', workflowDefinition: { key: 5 } })
    ).json()) as { account: { id: string }; workflowExecution: { id: string } };
    const details = (await (
      await s.call(
        'GET',
        path({ accountId: created.account.id, executionId: created.workflowExecution.id }),
        undefined,
        {},
        'retrieval',
      )
    ).json()) as { capabilities: { deviceRiskVerification: Array<{ credentials: unknown[] }> } };
    expect(details.capabilities.deviceRiskVerification[0]!.credentials).toEqual([]);
  });
});
