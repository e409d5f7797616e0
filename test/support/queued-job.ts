// One accepted checkout as the queue engines' shared cases hold it (arrival.ts, late-at.ts,
// reading.ts): its key names its fingerprint and order; `extra` sets the rest.
import type { CheckJob } from '../../src/server/queue/queue.js';

export const queuedJob = (key: string, extra: Partial<CheckJob> = {}): CheckJob => ({
  key,
  fingerprint: `f-${key}`,
  blackbox: 'bb',
  customer: { customerInternalReference: `order-${key}` },
  acceptedAt: Date.now(),
  ...extra,
});
