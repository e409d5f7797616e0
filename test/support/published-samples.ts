/**
 * The service's published samples, in our own words and values (docs/vendor-contract.md says
 * which page each one follows). The kit's calls are run against them (`publishedService`: each
 * role on its own documented host of region US), and the emulator's answers are compared with
 * them field by field (`shapeOf`), so that a difference between the emulator and the documents
 * is a failing test rather than a surprise in production.
 */
export const SAMPLE_IDS = {
  account: '0f6e2c1a-3b4d-4e5f-8a9b-1c2d3e4f5a6b',
  execution: '7a8b9c0d-1e2f-4a3b-9c4d-5e6f7a8b9c0d',
  credential: 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f',
  capability: '4b5c6d7e-8f90-4a1b-8c2d-3e4f5a6b7c8d',
} as const;

/** Region US's hosts, as the service's pages give them: one host per role. */
export const SAMPLE_HOSTS = {
  auth: 'https://auth.amer-1.jumio.ai',
  account: 'https://account.amer-1.jumio.ai',
  api: 'https://api.amer-1.jumio.ai',
  retrieval: 'https://retrieval.amer-1.jumio.ai',
} as const;

const executionPath = `/api/v1/accounts/${SAMPLE_IDS.account}/workflow-executions/${SAMPLE_IDS.execution}`;

/** The token answer (spec, "Access token response"). */
export const tokenAnswer = { access_token: 'sample-access-token', expires_in: 3600, token_type: 'Bearer' };

/**
 * The account create answer of a workflow with a Data credential, its part and execution
 * addresses on the `api.` host (the pages on prepared data and on account create). `part`:
 * the name of the part key, `device_risk` (the specification) or `prepared_data` (the pages).
 */
export function accountAnswer(part: 'device_risk' | 'prepared_data' = 'device_risk') {
  return {
    timestamp: '2026-11-02T10:15:30.123Z',
    account: { id: SAMPLE_IDS.account },
    workflowExecution: {
      id: SAMPLE_IDS.execution,
      credentials: [
        {
          id: SAMPLE_IDS.credential,
          category: 'DATA',
          label: 'DATA',
          allowedChannels: ['API'],
          api: {
            token: 'sample-transaction-token',
            parts: {
              [part]: `${SAMPLE_HOSTS.api}${executionPath}/credentials/${SAMPLE_IDS.credential}/parts/${part.toUpperCase()}`,
            },
            workflowExecution: `${SAMPLE_HOSTS.api}${executionPath}`,
          },
        },
      ],
    },
  };
}

/** The answer of an upload and of finalize (field notes §4: timestamp, account, execution). */
export const transactionAnswer = {
  timestamp: '2026-11-02T10:15:31.456Z',
  account: { id: SAMPLE_IDS.account },
  workflowExecution: { id: SAMPLE_IDS.execution },
};

/** The status read's answer on the retrieval host. */
export const statusAnswer = {
  account: { id: SAMPLE_IDS.account },
  workflowExecution: { id: SAMPLE_IDS.execution, definitionKey: '10010', status: 'PROCESSED' },
};

/**
 * The workflow details of a processed execution (the retrieval page and the Device Risk
 * page's response sample): the overall decision with a risk score from -1 to 100, and the
 * Device Risk capability, whose `data` holds strings (numbers too: latitude, age), booleans
 * and the alerts.
 */
export function detailsAnswer(
  decision: { type: string; label: string; score: number } = {
    type: 'REJECTED',
    label: 'HIGH_RISK',
    score: 92,
  },
) {
  return {
    createdAt: '2026-11-02T10:15:30.123Z',
    startedAt: '2026-11-02T10:15:31.456Z',
    completedAt: '2026-11-02T10:15:33.789Z',
    account: { id: SAMPLE_IDS.account },
    workflow: {
      id: SAMPLE_IDS.execution,
      status: 'PROCESSED',
      definitionKey: '10010',
      customerInternalReference: 'order-1042',
      userReference: 'shopper-77',
    },
    decision: { type: decision.type, details: { label: decision.label }, risk: { score: decision.score } },
    capabilities: {
      deviceRiskVerification: [
        {
          id: SAMPLE_IDS.capability,
          credentials: [{ id: SAMPLE_IDS.credential, category: 'DATA', label: 'DATA' }],
          decision: { type: decision.type, details: { label: decision.label } },
          data: {
            deviceModel: 'MAC',
            deviceOS: 'MAC OS X 14.6',
            browser: 'FIREFOX',
            browserVersion: '128.0',
            browserLanguage: 'DE-DE',
            browserTimezone: '+01:00',
            browserCookiesEnabled: true,
            deviceScreen: '1117X1728',
            trueIP: '198.51.100.23',
            statedIp: '198.51.100.23',
            isp: 'EXAMPLE TELECOM',
            ipLocationCity: 'HAMBURG',
            ipLocationRegion: 'HAMBURG',
            ipLocationCountry: 'DEU',
            ipLocationLatitude: '53.55',
            ipLocationLongitude: '9.99',
            deviceFirstSeen: '2025-03-14T08:00:00.000Z',
            deviceIsNew: false,
            metaDataAge: '86400',
            deviceAlerts: ['Device Risk Global', 'IP Mismatch'],
          },
        },
      ],
    },
  };
}

/** The callback the service POSTs (the callback page), its hrefs on the retrieval host. */
export function callbackBody(status = 'PROCESSED') {
  return {
    callbackSentAt: '2026-11-02T10:15:34.000Z',
    userReference: 'shopper-77',
    workflowExecution: {
      id: SAMPLE_IDS.execution,
      href: `${SAMPLE_HOSTS.retrieval}${executionPath}`,
      definitionKey: '10010',
      status,
    },
    account: { id: SAMPLE_IDS.account, href: `${SAMPLE_HOSTS.retrieval}/api/v1/accounts/${SAMPLE_IDS.account}` },
  };
}

/** The answer past a limit (the rate-limit page). */
export const tooManyRequests = { title: 'Too Many Requests', status: 429, detail: 'Request limit exceeded' };

/**
 * The shape of a JSON value: the same object with every leaf replaced by its type ("string",
 * "number", "boolean", "null") and every array by the shape of its first element. Two
 * answers of the same shape have the same keys at every level, with the same types.
 */
export function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.length ? [shapeOf(value[0])] : [];
  if (value === null) return 'null';
  if (typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, item]) => [key, shapeOf(item)]),
    );
  return typeof value;
}
