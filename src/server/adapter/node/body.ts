/**
 * The Node adapter's side of direct bodies (src/server/net/direct-body.ts): a web body that stands
 * for a Node stream, which response.ts and fastify.ts pipe instead of reading the web stream.
 */
import type { Readable } from 'node:stream';
import { takeDirectBody, type DirectBody } from '../../net/direct-body.js';

/** A web body's Node stream, and what to call once it was written, failed or was dropped. */
export type NodeBody = DirectBody<Readable>;

/**
 * The Node stream behind a web stream nobody has read yet, handed over once. Only the Node
 * side marks bodies (upstream.ts, each with the Readable of a node:http answer): on an edge
 * runtime nothing is marked, and this finds none.
 */
export const takeNodeBody = (stream: ReadableStream): NodeBody | undefined =>
  takeDirectBody(stream) as NodeBody | undefined;
