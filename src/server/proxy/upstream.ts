/**
 * How the first-party proxy calls the collector. On Node, through node:http with keep-alive
 * (src/server/adapter/node/upstream.ts, loaded on first use): the global fetch cost it about half its throughput.
 * A global fetch replaced since load (a test double, instrumentation) is respected. The build
 * for Workers and edge runtimes has no node:http path (its upstream.edge.ts stands in): workerd
 * with `nodejs_compat` has a `process.versions.node` but its node:http is fetch underneath.
 */
/** What the proxy sends the collector: the part of `fetch`'s init it uses. */
export interface UpstreamInit {
  method: string;
  headers: Headers;
  signal: AbortSignal;
  body?: Uint8Array<ArrayBuffer>;
}

export type CallUpstream = (url: URL, init: UpstreamInit) => Promise<Response>;

const ON_NODE =
  // Stryker disable next-line ConditionalExpression,OptionalChaining: the tests run on Node, where each form is true
  typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';
const FETCH_AT_LOAD = globalThis.fetch;

/** The collector's caller for one proxy: `fetchOption` if given, else as above; chosen on first call. */
export function upstreamCaller(fetchOption: typeof fetch | undefined): CallUpstream {
  let chosen: Promise<CallUpstream> | undefined;
  return async (url, init) => {
    chosen ??= (
      fetchOption || !ON_NODE || globalThis.fetch !== FETCH_AT_LOAD
        ? Promise.resolve(undefined)
        : // The one import of the Node adapter in the proxy: the edge build swaps in upstream.edge.ts.
          import('../adapter/node/upstream.js').then((module) => module.nodeUpstream)
    ).then((node) => node ?? ((u, i) => (fetchOption ?? fetch)(u, { ...i, redirect: 'manual' })));
    return (await chosen)(url, init);
  };
}
