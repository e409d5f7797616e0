/**
 * The gateway's sweep of the service's callbacks. The kit sweeps its pending callbacks once one
 * arrives, since a runtime that freezes between requests runs no timer
 * (src/server/callbacks/sweep.ts); a gateway runs on, so the callbacks an earlier process left
 * pending (stopped while their details read or onResult failed, or ran) are swept from its start,
 * and every `intervalMs` after, not only after the service's next callback, which may never come.
 * The stop resolves once the sweep under way has ended: a gateway closes its store after it.
 */
export function sweepFromStart(
  callbacks: { sweep(): Promise<void> },
  intervalMs: number,
  onError: (error: unknown) => void,
): () => Promise<void> {
  /** The latest sweep: the stop waits for it, so that the store is not closed under it. */
  let latest = Promise.resolve();
  const sweep = () => {
    latest = callbacks.sweep().catch((error: unknown) => {
      onError(error);
    });
  };
  const timer = setInterval(sweep, intervalMs);
  sweep();
  return () => {
    clearInterval(timer);
    return latest;
  };
}
