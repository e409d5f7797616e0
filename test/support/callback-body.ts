// The service's callback for a transaction the emulator made, as the service sends it: for the
// tests that deliver callbacks themselves (to chosen instances, twice, after a fault).

/** The documented callback body of a PROCESSED execution, its hrefs on `retrievalUrl`. */
export function callbackBodyOf(
  tx: { accountId: string; workflowExecutionId: string },
  retrievalUrl: string,
  definitionKey: string | number = 10020,
): string {
  const origin = new URL(retrievalUrl).origin;
  return JSON.stringify({
    callbackSentAt: new Date().toISOString(),
    workflowExecution: {
      id: tx.workflowExecutionId,
      href: `${origin}/api/v1/accounts/${tx.accountId}/workflow-executions/${tx.workflowExecutionId}`,
      definitionKey,
      status: 'PROCESSED',
    },
    account: { id: tx.accountId, href: `${origin}/api/v1/accounts/${tx.accountId}` },
  });
}
