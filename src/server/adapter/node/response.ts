/**
 * The Node adapter's second half: a web Response written to a Node response. A body that
 * stands for a Node stream (the proxy's answer from node:http, body.ts) is piped from it.
 */
import type { ServerResponse } from 'node:http';
import { takeNodeBody } from './body.js';

/** Writes a web Response to a Node response, streaming its body. */
export async function writeResponse(response: Response, res: ServerResponse, method = 'GET'): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    if (key !== 'set-cookie') headers[key] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  res.writeHead(response.status, response.statusText, headers);
  if (!response.body || method === 'HEAD') {
    await response.body?.cancel();
    res.end();
    return;
  }
  // A body that stands for a Node stream (the proxy's answer from node:http) is piped from
  // it; a failure on either side destroys the other, as below. (Not `pipeline()`: on Node 20
  // it makes an AbortController and a DOMException per call, 4 % of the proxy's CPU.)
  const direct = takeNodeBody(response.body);
  if (direct) {
    const { source, done } = direct;
    await new Promise<void>((resolve) => {
      // A source that failed before it got here has no error left to emit.
      if (source.errored) res.destroy();
      source.on('error', () => res.destroy());
      // 'close' follows 'finish', or a destroy: the client went away, or the source broke. A
      // source that ended is left as it is by destroy() (an upstream answer read to its end
      // keeps its socket for the next request).
      res.once('close', () => {
        source.destroy();
        done();
        resolve();
      });
      source.pipe(res);
    });
    return;
  }
  const reader = response.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.end();
  } catch {
    res.destroy(); // the upstream body broke: drop the connection rather than send a truncated 200
  }
}
