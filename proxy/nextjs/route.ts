// blackbox-capture: the first-party front as a Next.js route handler (App Router).
// Copy it to app/iojs/[...path]/route.ts; the collector comes from the environment:
//
//     BBC_UPSTREAM=https://first.iovation.com   (the sandbox: https://ci-first.iovation.com)
//
// Not `rewrites()`: a rewrite is a plain reverse proxy that sends the shop's cookies,
// Authorization and the client's own X-Forwarded-For to the vendor, forwards POST, and returns
// the vendor's cookie on Path=/ (docs/proxy.md). The kit's proxy keeps the contract; any
// method but GET and HEAD is answered 405 by Next.js itself (no handler is exported for it).
import { COLLECTOR_URLS, createFirstPartyProxy } from 'blackbox-capture/server';

const iojs = createFirstPartyProxy({
  prefix: '/iojs',
  collectorUrl: process.env.BBC_UPSTREAM ?? COLLECTOR_URLS.production,
});

// Vercel writes the client's address into x-real-ip, over whatever the client sent. Self-hosted,
// only a load balancer of your own that overwrites it makes it true; a route handler cannot see
// the connection's peer, and Next.js keeps a client's own X-Forwarded-For.
export const GET = (request: Request) =>
  iojs(request, { clientAddress: request.headers.get('x-real-ip') ?? undefined });
export const HEAD = GET;
