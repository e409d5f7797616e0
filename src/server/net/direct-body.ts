/**
 * Web body streams that stand for a runtime's own stream, so that the runtime's adapter can
 * write them straight from it: on Node, the proxy's answer then goes upstream socket → client
 * socket in one `pipe`, not through three web-stream hops (Node stream → web stream → the
 * proxy's deadline wrapper → the adapter's reader loop). Measured in `npm run bench` (the
 * README has the figures). Anyone else reads the web stream as usual; a body is handed over once.
 *
 * Nothing here knows a runtime: the proxy, which runs on edge runtimes too, uses `withDone`;
 * the Node adapter marks and takes its own bodies (src/server/adapter/node/body.ts).
 */

export interface DirectBody<Source = unknown> {
  /** The runtime's stream that the web stream stands for (a Node `Readable`). */
  readonly source: Source;
  /**
   * Called once when the body was written, failed or was dropped, by whoever consumed it:
   * the adapter, or the web stream's own end, failure or cancellation. `withDone` adds to it.
   */
  done: () => void;
}

const bodies = new WeakMap<ReadableStream, DirectBody>();

/** Marks `stream` as a view of `body.source`. */
export function standFor(stream: ReadableStream, body: DirectBody): void {
  bodies.set(stream, body);
}

/** Unmarks `stream`: its source is being read through it. */
export function forget(stream: ReadableStream): void {
  bodies.delete(stream);
}

/**
 * The runtime's stream behind a web stream nobody has read yet, handed over once: the web
 * stream must not be read afterwards. Undefined for any other stream.
 */
export function takeDirectBody(stream: ReadableStream): DirectBody | undefined {
  const body = bodies.get(stream);
  if (!body || stream.locked) return undefined;
  bodies.delete(stream);
  return body;
}

/**
 * A web stream that opens its source only when first read and calls `done` once when the
 * source ends, fails or is cancelled. `drop` cancels a source never opened (default: open and
 * cancel it).
 */
export function readThrough(
  open: () => ReadableStream<Uint8Array>,
  done: () => void,
  drop: (reason: unknown) => void | Promise<void> = (reason) => open().cancel(reason),
): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          reader ??= open().getReader();
          const { done: ended, value } = await reader.read();
          if (ended) {
            done();
            controller.close();
          } else controller.enqueue(value);
        } catch (error) {
          done();
          controller.error(error);
        }
      },
      cancel(reason) {
        done();
        return reader ? reader.cancel(reason) : drop(reason);
      },
    },
    // Nothing is read before someone asks: a body handed over to the adapter must be unread.
    { highWaterMark: 0 },
  );
}

/**
 * `inner`, with `done` called once when it ends, fails or is cancelled. A stream that stands
 * for a runtime's stream is returned as it is, with `done` added to its own (no stream more to make
 * and read through); any other is wrapped.
 */
export function withDone(inner: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  const direct = bodies.get(inner);
  if (!direct) return readThrough(() => inner, done);
  const before = direct.done;
  direct.done = () => {
    before();
    done();
  };
  return inner;
}
