// The token source's rate limit, on the real clock: a window of a little more than a second
// is what it promises, so these tests take that long (the integration project, not the
// unit suite).
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../../src/emulator/index.js';
import { createMemoryStore, createTokenSource } from '../../../src/server/index.js';
import { tokenSourceOn } from '../../support/kit.js';

let emulator: Emulator;
afterEach(async () => {
  await emulator?.close();
});

const source = (extra: Partial<Parameters<typeof createTokenSource>[0]> = {}) => tokenSourceOn(emulator, extra);

describe('createTokenSource rate limit', () => {
  it('never sends more than 10 token requests a second for one client id, even from many sources sharing a store', async () => {
    emulator = await startEmulator();
    const store = createMemoryStore();
    const sources = Array.from({ length: 14 }, () => source({ store }));
    const started = Date.now();
    const results: string[] = [];
    for (const s of sources) {
      await s.invalidate();
      results.push(await s.getToken());
    }
    expect(new Set(results).size).toBe(14);
    // No 429 happened (each one would have cost a retry), because the limiter spread them.
    expect(emulator.inspect.requests('token')).toBe(14);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('one source refreshing repeatedly stays under 10 requests a second and never sees 429', async () => {
    emulator = await startEmulator();
    const tokens = source();
    const started = Date.now();
    for (let i = 0; i < 13; i++) {
      await tokens.getToken();
      await tokens.invalidate(); // every call needs a new token
    }
    expect(emulator.inspect.requests('token')).toBe(13);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900); // the 11th request waited for the window
  });
});
