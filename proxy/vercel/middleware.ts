// blackbox-capture: the first-party front as Vercel Routing Middleware (the Edge runtime).
// Save it as middleware.ts at the root of your project; the collector comes from the
// project's environment variables:
//
//     BBC_UPSTREAM=https://first.iovation.com   (the sandbox: https://ci-first.iovation.com)
//
// Not a `rewrites` entry of vercel.json: that is a plain reverse proxy which sends the shop's
// cookies and credentials to the vendor and returns its cookie on Path=/ (docs/proxy.md).
// The `edge-light` export condition loads the kit's build that imports nothing from Node.
import { COLLECTOR_URLS, createFirstPartyProxy } from 'blackbox-capture/server';

export const config = { matcher: '/iojs/:path*' };

let iojs: ReturnType<typeof createFirstPartyProxy> | undefined;

export default function middleware(request: Request): Promise<Response> {
  // Built on the first request: the environment is read then, not when the bundle loads.
  iojs ??= createFirstPartyProxy({
    prefix: '/iojs',
    collectorUrl: process.env.BBC_UPSTREAM ?? COLLECTOR_URLS.production,
  });
  // Vercel writes the client's address into x-real-ip, over whatever the client sent.
  return iojs(request, { clientAddress: request.headers.get('x-real-ip') ?? undefined });
}
