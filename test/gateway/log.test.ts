// The gateway's log (src/gateway/log.ts): text for a terminal, one JSON object per line for a
// collector, errors with their code and order, and a failing source rate-limited.
import { describe, expect, it, vi } from 'vitest';
import { DeviceRiskError, NotCheckedError } from '../../src/server/index.js';
import { createLog, errorEvent, rateLimited, RATE_LIMIT_WINDOW_MS, refusedEvent } from '../../src/gateway/log.js';

const AT = new Date('2026-11-29T06:00:00.000Z');

function written(format: 'text' | 'json') {
  const lines: string[] = [];
  return {
    lines,
    log: createLog(
      format,
      (line) => lines.push(line),
      () => AT,
    ),
  };
}

describe('the gateway log', () => {
  it("json: the time is the clock's, by default", () => {
    const lines: string[] = [];
    const before = Date.now();
    createLog('json', (line) => lines.push(line))('now');
    const { time } = JSON.parse(lines[0]!) as { time: string };
    expect(Date.parse(time)).toBeGreaterThanOrEqual(before - 1000);
    expect(time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('text: the message behind the gateway prefix, whatever the fields', () => {
    const { lines, log } = written('text');
    log('refused a checkout: origin_not_allowed', refusedEvent('origin_not_allowed'));
    expect(lines).toEqual(['blackbox-capture gateway: refused a checkout: origin_not_allowed']);
  });

  it('text: one event, one line: control characters in a message (an order reference) written escaped', () => {
    const { lines, log } = written('text');
    log('refused a checkout: order_already_checked (order A-1\nblackbox-capture gateway: forged\t\u0000\u007f)');
    expect(lines).toEqual([
      'blackbox-capture gateway: refused a checkout: order_already_checked (order A-1\\u000ablackbox-capture gateway: forged\\u0009\\u0000\\u007f)',
    ]);
  });

  it('json: one object per line with time, level, event, code and reference when given, and the message', () => {
    const { lines, log } = written('json');
    log('listening');
    log('refused a checkout: order_already_checked', { ...refusedEvent('order_already_checked'), reference: 'INV-7' });
    expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual([
      { time: AT.toISOString(), level: 'info', event: 'gateway', message: 'listening' },
      {
        time: AT.toISOString(),
        level: 'warn',
        event: 'refused',
        code: 'order_already_checked',
        reference: 'INV-7',
        message: 'refused a checkout: order_already_checked',
      },
    ]);
    // A message with a line break or a quote stays one line of valid JSON.
    log('a "quoted"\nmessage');
    expect(lines.at(-1)!.split('\n')).toHaveLength(1);
    expect((JSON.parse(lines.at(-1)!) as { message: string }).message).toBe('a "quoted"\nmessage');
  });

  it('tells an error by its code, and a checkout never to be checked by its order too', () => {
    const notChecked = new NotCheckedError({
      key: 'key-1234567890',
      fingerprint: 'f',
      blackbox: 'b',
      customer: { customerInternalReference: 'INV-2026-0001' },
      acceptedAt: 0,
    });
    expect(errorEvent(notChecked)[1]).toEqual({
      level: 'error',
      event: 'not_checked',
      code: notChecked.code,
      reference: 'INV-2026-0001',
    });
    expect(errorEvent(notChecked)[0]).toContain('(order INV-2026-0001)');
    const refused = new DeviceRiskError('token_rejected', 'the service refused the client credentials');
    expect(errorEvent(refused)).toEqual([
      `token_rejected ${refused.message}`,
      { level: 'error', event: 'error', code: 'token_rejected' },
    ]);
    const network = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    expect(errorEvent(network)).toEqual([
      'Error connect ECONNREFUSED 127.0.0.1:6379',
      { level: 'error', event: 'error', code: 'ECONNREFUSED' },
    ]);
    expect(errorEvent('odd')).toEqual(['odd', { level: 'error', event: 'error' }]);
    // An error's code is told when it is a name, not a number of its own (errno's).
    expect(errorEvent(Object.assign(new Error('odd'), { code: 5 }))[1]).toEqual({ level: 'error', event: 'error' });
  });

  it('rate-limited: one line per key each window, the lines held back counted on the next', () => {
    const lines: string[] = [];
    let now = 1_000_000;
    const limited = rateLimited(
      (message) => lines.push(message),
      () => now,
    );
    for (let i = 0; i < 50; i++) limited('ECONNREFUSED', 'redis: connect ECONNREFUSED');
    limited('ETIMEDOUT', 'redis: ETIMEDOUT');
    expect(lines).toEqual(['redis: connect ECONNREFUSED', 'redis: ETIMEDOUT']);
    expect(limited.tracked()).toBe(2);
    now += RATE_LIMIT_WINDOW_MS - 1;
    limited('ECONNREFUSED', 'redis: connect ECONNREFUSED');
    expect(lines).toHaveLength(2);
    now += 1;
    limited('ECONNREFUSED', 'redis: connect ECONNREFUSED');
    expect(lines.at(-1)).toBe('redis: connect ECONNREFUSED (and 50 more like it in the last 10 s)');
    // The keys whose window has ended are swept with the next line: ETIMEDOUT's is gone.
    expect(limited.tracked()).toBe(1);
    // A new window starts counting afresh.
    now += RATE_LIMIT_WINDOW_MS;
    limited('ECONNREFUSED', 'redis: connect ECONNREFUSED');
    expect(lines.at(-1)).toBe('redis: connect ECONNREFUSED');
  });

  it("rate-limited: a window swept by another key's line says the lines it held back, never losing their count", () => {
    const lines: string[] = [];
    let now = 1_000_000;
    const limited = rateLimited(
      (message) => lines.push(message),
      () => now,
    );
    for (let i = 0; i < 501; i++) limited('store_full', `outbox: store_full ${i}`);
    now += RATE_LIMIT_WINDOW_MS;
    limited('store_unavailable', 'outbox: store_unavailable');
    expect(lines).toEqual([
      'outbox: store_full 0',
      'outbox: store_full 500 (and 499 more like it, held back)',
      'outbox: store_unavailable',
    ]);
    // Said once: store_full's next line starts afresh.
    limited('store_full', 'outbox: store_full again');
    expect(lines.at(-1)).toBe('outbox: store_full again');
    // One held alone is said alone, no "more" about it.
    limited('store_full', 'outbox: store_full held');
    now += RATE_LIMIT_WINDOW_MS;
    limited('store_unavailable', 'outbox: store_unavailable again');
    expect(lines.slice(-2)).toEqual(['outbox: store_full held', 'outbox: store_unavailable again']);
  });

  it('rate-limited: a window no line follows says what it held back when it ends; that line opens the next', () => {
    vi.useFakeTimers();
    try {
      const lines: string[] = [];
      const limited = rateLimited((message) => lines.push(message));
      for (let i = 0; i < 3; i++) limited('store_full', `outbox: store_full ${i}`);
      vi.advanceTimersByTime(RATE_LIMIT_WINDOW_MS - 1);
      expect(lines).toEqual(['outbox: store_full 0']);
      vi.advanceTimersByTime(1);
      expect(lines).toEqual(['outbox: store_full 0', 'outbox: store_full 2 (and 1 more like it, held back)']);
      // A failure that goes on: still one line each window.
      limited('store_full', 'outbox: store_full 3');
      expect(lines).toHaveLength(2);
      vi.advanceTimersByTime(RATE_LIMIT_WINDOW_MS);
      expect(lines.at(-1)).toBe('outbox: store_full 3');
      // It stopped: the window ends with nothing to say, and no timer is left.
      vi.advanceTimersByTime(RATE_LIMIT_WINDOW_MS * 3);
      expect([lines.length, vi.getTimerCount()]).toEqual([3, 0]);
      limited('store_full', 'outbox: store_full 4');
      expect(lines.at(-1)).toBe('outbox: store_full 4');
    } finally {
      vi.useRealTimers();
    }
  });

  it("rate-limited: a window's timer goes with it when a line starts the next: it says nothing early", () => {
    vi.useFakeTimers();
    try {
      const lines: string[] = [];
      let now = 0;
      const limited = rateLimited(
        (message) => lines.push(message),
        () => now,
      );
      limited('k', 'k 1');
      limited('k', 'k 2');
      vi.advanceTimersByTime(RATE_LIMIT_WINDOW_MS / 2);
      // The clock the limiter reads passes the window before its timer fires.
      now = RATE_LIMIT_WINDOW_MS;
      limited('k', 'k 3');
      limited('k', 'k 4');
      // The first window's time: its timer is gone, the second window's comes later.
      vi.advanceTimersByTime(RATE_LIMIT_WINDOW_MS / 2);
      expect(lines).toEqual(['k 1', 'k 3 (and 1 more like it in the last 10 s)']);
      vi.advanceTimersByTime(RATE_LIMIT_WINDOW_MS / 2);
      expect(lines.at(-1)).toBe('k 4');
    } finally {
      vi.useRealTimers();
    }
  });

  it('rate-limited: flush() says every line held back now and ends every window', () => {
    const lines: string[] = [];
    const limited = rateLimited(
      (message) => lines.push(message),
      () => 0,
    );
    limited('a', 'a 1');
    limited('a', 'a 2');
    limited('b', 'b 1');
    limited.flush();
    expect(lines).toEqual(['a 1', 'b 1', 'a 2']);
    expect(limited.tracked()).toBe(0);
    limited('b', 'b 2');
    expect(lines.at(-1)).toBe('b 2');
  });
});
