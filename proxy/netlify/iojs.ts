// blackbox-capture: the first-party front as a Netlify Edge Function (Deno).
// Save it as netlify/edge-functions/iojs.ts; the collector comes from the site's environment
// variables:
//
//     BBC_UPSTREAM=https://first.iovation.com   (the sandbox: https://ci-first.iovation.com)
//
// Not a redirect with status 200 (a proxy rule in netlify.toml or _redirects): that is a plain
// reverse proxy which sends the shop's cookies and credentials to the vendor and returns its
// cookie on Path=/ (docs/proxy.md).
import { COLLECTOR_URLS, createFirstPartyProxy } from 'blackbox-capture/server';

declare const Netlify: { env: { get(name: string): string | undefined } };

let iojs: ReturnType<typeof createFirstPartyProxy> | undefined;

export default function handler(request: Request, context: { ip: string }): Promise<Response> {
  // Built on the first request: the environment is read then, not when the module loads.
  iojs ??= createFirstPartyProxy({
    prefix: '/iojs',
    collectorUrl: Netlify.env.get('BBC_UPSTREAM') ?? COLLECTOR_URLS.production,
  });
  // Netlify's context.ip is the connection's peer, which a client cannot write.
  return iojs(request, { clientAddress: context.ip });
}

export const config = { path: '/iojs/*' };
