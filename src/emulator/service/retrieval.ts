/**
 * The emulated retrieval API: a workflow execution's status and details with the access
 * token, at most `retrievalRequestsPerSecond` a second together (docs/vendor-contract.md#the-service:
 * 15), then 429.
 */
import { randomUUID } from 'node:crypto';
import { decodeBlackbox } from '../scripts/routes.js';
import { checkContentType, checkUserAgent, json, problem, TOO_MANY_REQUESTS } from './http.js';
import {
  EXECUTION_PATH,
  slidingWindow,
  STATUS_PATH,
  type EmulatedDecision,
  type ServiceState,
  type Transaction,
} from './state.js';

export function createRetrieval(state: ServiceState) {
  const { options, transactions, statusOf, authorizedByAccessToken } = state;
  const retrievalWindow = slidingWindow(options.retrievalRequestsPerSecond, options.now);

  function status(request: Request, match: RegExpExecArray): Response {
    const denied = authorizedByAccessToken(request);
    if (denied) return denied;
    const tx = transactions.get(match[2]!);
    if (!tx || tx.accountId !== match[1]) return problem(404, 'Not Found', 'Unknown account or workflow execution');
    return json({
      account: { id: tx.accountId },
      workflowExecution: { id: tx.workflowExecutionId, definitionKey: tx.workflowKey, status: statusOf(tx) },
    });
  }

  /**
   * What the vendor saw of the device, from the values the dynamic first-party script embedded:
   * of the published sample's types (docs/vendor-contract.md#the-answer), text and numbers
   * alike as strings ("53.55", "86400"), booleans for cookies and a new device, the alerts a list.
   */
  function deviceData(tx: Transaction, decision: Pick<EmulatedDecision, 'alerts'>): Record<string, unknown> {
    // Stryker disable next-line StringLiteral: no blackbox and one that is no blackbox both decode to nothing
    const decoded = decodeBlackbox(tx.blackboxes.at(-1) ?? '');
    const embedded = decoded?.embedded.fp_dyn ?? decoded?.embedded.tp_dyn ?? {};
    // Stryker disable next-line StringLiteral: any text naming no browser and no system reads as no user agent
    const ua = embedded.ua ?? '';
    const browser = /(Edg|Firefox|Chrome|Safari)\/([\d.]+)/.exec(ua);
    // The most specific first: an Android user agent names Linux before Android.
    const os = ['Android', 'iPhone', 'iPad', 'Windows', 'Mac OS X', 'Linux'].find((name) => ua.includes(name));
    return {
      deviceModel: /Mobile|Android|iPhone/.test(ua) ? 'Mobile' : 'Desktop',
      deviceOS: os === 'Mac OS X' ? 'MacOS' : (os ?? 'Unknown'),
      browser: browser
        ? { Edg: 'Edge', Firefox: 'Firefox', Chrome: 'Chrome', Safari: 'Safari' }[browser[1]!]
        : 'Unknown',
      browserVersion: browser?.[2] ?? '',
      browserLanguage: (embedded.lang ?? '').split(',')[0]!,
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
      deviceFirstSeen: new Date(tx.createdAt).toISOString(),
      deviceIsNew: true,
      metaDataAge: '0',
      deviceAlerts: [...(decision.alerts ?? [])],
    };
  }

  /** The workflow details, in the documented shape: the decision, and the Device Risk capability's. */
  function details(request: Request, match: RegExpExecArray): Response {
    const denied = authorizedByAccessToken(request);
    if (denied) return denied;
    const tx = transactions.get(match[2]!);
    if (!tx || tx.accountId !== match[1]) return problem(404, 'Not Found', 'Unknown account or workflow execution');
    // Not processed yet: not executed, its credential's data not there (a documented label).
    const decision = tx.decision ?? { type: 'NOT_EXECUTED', label: 'PRECONDITION_NOT_FULFILLED', score: -1 };
    return json({
      createdAt: new Date(tx.createdAt).toISOString(),
      startedAt: new Date(tx.createdAt).toISOString(),
      ...(tx.processedAt === undefined ? {} : { completedAt: new Date(tx.processedAt).toISOString() }),
      account: { id: tx.accountId },
      workflow: {
        id: tx.workflowExecutionId,
        status: statusOf(tx),
        definitionKey: tx.workflowKey,
        customerInternalReference: tx.customerInternalReference,
        ...(tx.userReference ? { userReference: tx.userReference } : {}),
      },
      // The overall risk score is always there: -1 exactly when NOT_EXECUTED.
      decision: { type: decision.type, details: { label: decision.label }, risk: { score: decision.score } },
      capabilities: {
        deviceRiskVerification: [
          {
            id: randomUUID(),
            credentials: tx.credentialId ? [{ id: tx.credentialId, category: 'DATA', label: 'DATA' }] : [],
            decision: { type: decision.type, details: { label: decision.label } },
            data: deviceData(tx, decision),
          },
        ],
      },
    });
  }

  /** The retrieval API: status and details, with the access token. */
  function retrieval(request: Request): Response {
    const { pathname } = new URL(request.url);
    const agent = checkUserAgent(request) ?? checkContentType(request);
    if (agent) return agent;
    if (request.method !== 'GET') return problem(405, 'Method Not Allowed', 'Use GET', { allow: 'GET' });
    if (!retrievalWindow.take()) return TOO_MANY_REQUESTS(1);
    const statusMatch = STATUS_PATH.exec(pathname);
    if (statusMatch) return status(request, statusMatch);
    const executionMatch = EXECUTION_PATH.exec(pathname);
    if (executionMatch) return details(request, executionMatch);
    return problem(404, 'Not Found', 'Unknown path');
  }

  return { retrieval };
}
