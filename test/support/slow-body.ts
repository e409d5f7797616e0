// Request bodies that arrive a byte at a time: over a real socket (a chunked POST written
// byte by byte) and as a web stream. For the body time limits.
import { connect } from 'node:net';

export interface Trickled {
  /** Everything the server wrote back before it closed the connection. */
  answer: string;
  /** Body bytes written before the server closed the connection. */
  sent: number;
  /** Milliseconds from the request line to the connection's close. */
  heldMs: number;
}

/**
 * A chunked POST to `origin` + `path` whose body is one byte every `everyMs`, for as long as the
 * server keeps the connection open (at most `maxBytes`, then the body ends).
 */
export function trickle(
  origin: string,
  path: string,
  { everyMs = 200, maxBytes = 200, headers = {} as Record<string, string> } = {},
): Promise<Trickled> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(Number(port), hostname);
    let answer = '';
    let sent = 0;
    const head = Object.entries({ 'content-type': 'application/json', ...headers })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nTransfer-Encoding: chunked\r\n${head}\r\n`);
    const timer = setInterval(() => {
      if (socket.destroyed || !socket.writable) return;
      if (sent === maxBytes) return void socket.write('0\r\n\r\n');
      sent++;
      socket.write('1\r\n{\r\n');
    }, everyMs);
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('error', () => {}); // a reset after the answer: the close below tells
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer, sent, heldMs: Date.now() - started });
    });
  });
}

/** A web body that yields one byte every `everyMs` and never ends; `cancelled` once cancelled. */
export function slowStream(everyMs = 200) {
  let timer: ReturnType<typeof setInterval> | undefined;
  const state = { cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => controller.enqueue(new Uint8Array([0x7b])), everyMs);
    },
    cancel() {
      clearInterval(timer);
      state.cancelled = true;
    },
  });
  return Object.assign(state, { stream });
}

/** A POST whose body is `stream`. */
export const postOf = (url: string, stream: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
  new Request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: stream,
    duplex: 'half',
  } as RequestInit);
