/**
 * Stands in for upstream.ts in the build for Workers and edge runtimes
 * (dist/server.edge.js): no node:http path, so that the proxy calls its collector with the
 * runtime's fetch and the bundle imports nothing from Node.
 */
import type { UpstreamInit } from '../../proxy/upstream.js';

export const nodeUpstream: ((url: URL, init: UpstreamInit) => Promise<Response>) | undefined = undefined;
