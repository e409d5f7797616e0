// The proxy's Node upstream when the runtime's node:http destroys a request without an
// 'error' event (Deno's, built on fetch): the time limit must still end the call.
import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { nodeUpstream } from '../../../../src/server/adapter/node/upstream.js';

/** A node:http request that never answers, and whose destroy() emits nothing. */
class SilentRequest extends EventEmitter {
  reusedSocket = false;
  destroyed = false;
  destroy() {
    this.destroyed = true;
    return this;
  }
  end() {
    return this;
  }
}
const made: SilentRequest[] = [];
// Hoisted above the imports by vitest: upstream.ts gets this node:http.
vi.mock('node:http', async (original) => ({
  ...(await original<typeof import('node:http')>()),
  request: () => {
    const request = new SilentRequest();
    made.push(request);
    return request;
  },
}));

describe('nodeUpstream with a node:http that destroys silently', () => {
  it('rejects with the signal’s reason when the time limit aborts', async () => {
    const limit = new AbortController();
    const call = nodeUpstream(new URL('http://127.0.0.1:9/x'), {
      method: 'GET',
      headers: new Headers(),
      signal: limit.signal,
    });
    const reason = new Error('time is up');
    limit.abort(reason);
    await expect(call).rejects.toBe(reason);
    expect(made[0]!.destroyed).toBe(true);
  }, 5000);
});
