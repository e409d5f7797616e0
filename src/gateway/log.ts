/**
 * The gateway's log on stderr: one line per event, as readable text (the default, for a
 * terminal) or, with LOG_FORMAT=json, one JSON object per line for a log collector: `time`,
 * `level`, `event`, the error's `code` and the order's `reference` when there are, `message`
 * (docs/gateway.md#logs). Nothing here adds a secret: messages are the kit's, which never
 * carry one. A source that fails over and over (a Redis that went away) is rate-limited.
 */
import { unrefd } from '../server/parts.js';
import { isDeviceRiskError, NotCheckedError } from '../server/index.js';
import { OrderTokenError } from './order-token.js';
import type { LogFormat } from './settings.js';

type LogLevel = 'info' | 'warn' | 'error';

export interface LogFields {
  /** Default `info`. */
  level?: LogLevel;
  /** What happened, in one word: `refused`, `error`, `credentials`, `redis`, … Default `gateway`. */
  event?: string;
  /** The stable code of the refusal or the error. */
  code?: string;
  /** The order's customerInternalReference, when the line is about one order. */
  reference?: string;
}

/** One event of the log: its message, and what a collector indexes it by. */
export type Log = (message: string, fields?: LogFields) => void;

// eslint-disable-next-line no-control-regex -- the control characters are what the text log escapes
const CONTROL = /[\u0000-\u001f\u007f]/g;
const escape = (character: string) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** A log that writes each event as a line of `format` through `write`. */
export function createLog(format: LogFormat, write: (line: string) => void, now: () => Date = () => new Date()): Log {
  // One event, one line: a control character in a message (an order reference holding a line
  // break) is written escaped (\u000a), never as a line of its own that could pass for another event.
  if (format === 'text') return (message) => write(`blackbox-capture gateway: ${message.replace(CONTROL, escape)}`);
  return (message, fields = {}) => {
    const { level = 'info', event = 'gateway', code, reference } = fields;
    // A field left undefined is left out by JSON.stringify: no `"code": null` for a collector to index.
    write(JSON.stringify({ time: now().toISOString(), level, event, code, reference, message }));
  };
}

/** An error as the log tells it: its code and message, its order's reference when it names one. */
export function errorEvent(error: unknown): [string, LogFields] {
  if (error instanceof NotCheckedError)
    return [
      `${error.code} ${error.message} (order ${error.customerInternalReference})`,
      { level: 'error', event: 'not_checked', code: error.code, reference: error.customerInternalReference },
    ];
  if (isDeviceRiskError(error) || error instanceof OrderTokenError)
    return [`${error.code} ${error.message}`, { level: 'error', event: 'error', code: error.code }];
  const code = (error as { code?: unknown } | undefined)?.code;
  const fields: LogFields = { level: 'error', event: 'error', ...(typeof code === 'string' ? { code } : {}) };
  return [error instanceof Error ? `${error.name} ${error.message}` : String(error), fields];
}

/** How often one key's lines pass at most: one per window, the rest counted. */
export const RATE_LIMIT_WINDOW_MS = 10_000;

/**
 * `log`, at most one line per `key` each window (a Redis that refuses every connection would
 * otherwise write one a few milliseconds apart). The lines a window held back are said when it
 * ends, the last one with their count: by the key's next line, or, when none comes, by a timer
 * that keeps no process alive, whose line opens the next window; by `flush()` at the latest (the
 * gateway's close). Keys are few (an error's code), and a key's entry goes when its window ends.
 */
export function rateLimited(log: Log, now: () => number = Date.now, windowMs = RATE_LIMIT_WINDOW_MS) {
  /** Each key's window: until when it holds lines back, how many it held, the last it held, its timer. */
  const windows = new Map<
    string,
    { until: number; held: number; last?: [string, LogFields | undefined]; timer?: ReturnType<typeof setTimeout> }
  >();
  /** Ends `key`'s window: its last line held back said now, and the ones before it counted. */
  const sayHeld = (key: string): void => {
    const window = windows.get(key)!;
    windows.delete(key);
    clearTimeout(window.timer);
    if (window.last) log(heldBack(window.last[0], window.held - 1), window.last[1]);
  };
  /** A window's end with lines held and none of its key's since: said, and that line opens the next window. */
  const ended = (key: string): void => {
    sayHeld(key);
    windows.set(key, { until: now() + windowMs, held: 0 });
  };
  const limited = (key: string, message: string, fields?: LogFields): void => {
    const at = now();
    const open = windows.get(key);
    if (open && at < open.until) {
      open.held++;
      open.last = [message, fields];
      open.timer ??= unrefd(setTimeout(() => ended(key), open.until - at));
      return;
    }
    if (open) clearTimeout(open.timer);
    windows.delete(key);
    // A window swept with lines held back says them, so that another key's line never loses their count.
    for (const [other, window] of windows) if (at >= window.until) sayHeld(other);
    windows.set(key, { until: at + windowMs, held: 0 });
    const held = open?.held ?? 0;
    log(held > 0 ? `${message} (and ${held} more like it in the last ${windowMs / 1000} s)` : message, fields);
  };
  return Object.assign(limited, {
    /** The keys whose window is open or not yet swept: bounded by the keys seen within one window. */
    tracked: () => windows.size,
    /** Says every line held back now, and ends every window. */
    flush: () => [...windows.keys()].forEach(sayHeld),
  });
}

/** A line held back, said late: with how many more like it were held back before it. */
const heldBack = (message: string, more: number): string =>
  more > 0 ? `${message} (and ${more} more like it, held back)` : message;

/** The fields of a request the gateway refused, by its code. */
export const refusedEvent = (code: string): LogFields => ({ level: 'warn', event: 'refused', code });

/** Refusals their handler logged in its own words (routes.ts logs every other one). */
const toldRefusals = new WeakSet<Response>();

/** `response`, marked as logged by the handler that refused: the router does not log it again. */
export function toldRefusal(response: Response): Response {
  toldRefusals.add(response);
  return response;
}

/** Whether a handler logged this refusal itself. */
export const refusalTold = (response: Response): boolean => toldRefusals.has(response);
