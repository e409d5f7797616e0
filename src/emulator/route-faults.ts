/**
 * What a test makes the emulator's routes do: each request counted by route, delayed
 * (`latency`), or failed (`fail`: an answer of a status, or a dropped connection).
 */
import type { FetchHandler } from '../server/index.js';
import type { Fault, RouteName } from './index.js';

/** Thrown by a handler to make the emulator's server drop the connection. */
export class DropConnection extends Error {}

/** `status` is the retrieval status read's other name: counted and failed as `retrievalStatus`. */
export const canonicalRoute = (route: RouteName): RouteName => (route === 'status' ? 'retrievalStatus' : route);

export function createRouteFaults() {
  const counts = new Map<RouteName, number>();
  const pendingFaults = new Map<RouteName, Array<Required<Pick<Fault, 'times'>> & Fault>>();
  const latencies = new Map<RouteName, number>();

  /** Counting, latency and faults around a handler; `route` names the request. */
  const instrument =
    (route: (request: Request) => RouteName, handler: FetchHandler): FetchHandler =>
    async (request, context) => {
      const name = canonicalRoute(route(request));
      counts.set(name, (counts.get(name) ?? 0) + 1);
      const delay = latencies.get(name);
      if (delay) await new Promise((resolve) => setTimeout(resolve, delay));
      const queue = pendingFaults.get(name);
      const fault = queue?.[0];
      if (fault) {
        if (--fault.times <= 0) queue.shift();
        if (fault.drop) throw new DropConnection();
        return new Response(
          JSON.stringify({ title: 'Injected fault', status: fault.status, detail: 'emulator fault injection' }),
          {
            status: fault.status ?? 500,
            headers: {
              'content-type': 'application/problem+json',
              ...(fault.status === 429 || fault.status === 503 ? { 'retry-after': '1' } : {}),
            },
          },
        );
      }
      return handler(request, context);
    };

  return {
    instrument,
    counts,
    routeFaults: {
      fail: (name: RouteName, fault: Fault) => {
        const route = canonicalRoute(name);
        const queue = pendingFaults.get(route) ?? [];
        queue.push({ ...fault, times: fault.times ?? 1 });
        pendingFaults.set(route, queue);
      },
      latency: (route: RouteName, ms: number) => {
        latencies.set(canonicalRoute(route), ms);
      },
      clear: () => {
        pendingFaults.clear();
        latencies.clear();
      },
    },
  };
}
