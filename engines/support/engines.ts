/**
 * One page API over the three browser engines a shopper uses, so that one spec runs in each:
 * Chromium and Firefox through puppeteer-core (CDP and WebDriver BiDi), WebKit through
 * WebKitGTK's WebDriver (classic, spoken here over fetch) with MiniBrowser in an Xvfb display.
 * All three are Debian's packages: nothing is downloaded at test time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { freePort } from '../../scripts/processes.mjs';

export type EngineName = 'chromium' | 'firefox' | 'webkit';

/** A function run in the page (its source is sent, so it closes over nothing), with JSON arguments. */
export type PageFunction<Args extends unknown[], Result> = (...args: Args) => Result | Promise<Result>;

export interface EnginePage {
  readonly engine: EngineName;
  /** Navigates and waits for the load event. */
  goto(url: string): Promise<void>;
  /** Runs `fn` in the page and resolves with its (awaited, JSON) result. */
  evaluate<Args extends unknown[], Result>(fn: PageFunction<Args, Result>, ...args: Args): Promise<Result>;
  /** The engine's own version, e.g. "Firefox 153.7.0esr". */
  version(): Promise<string>;
  close(): Promise<void>;
}

/** Where each engine is installed (Debian's packages; each path can be overridden). */
export const ENGINE_PATHS: Record<EngineName, string> = {
  chromium: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  firefox: process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr',
  webkit: process.env.WEBKIT_DRIVER_PATH ?? '/usr/bin/WebKitWebDriver',
};
const MINIBROWSER = process.env.MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
const XVFB = process.env.XVFB_PATH ?? '/usr/bin/Xvfb';

/** The engines present on this machine; under CI a missing one is an error, not a skip. */
export function availableEngines(): EngineName[] {
  const present = (['chromium', 'firefox', 'webkit'] as const).filter(
    (engine) =>
      existsSync(ENGINE_PATHS[engine]) && (engine !== 'webkit' || (existsSync(MINIBROWSER) && existsSync(XVFB))),
  );
  if (process.env.CI && present.length < 3)
    throw new Error(
      `CI is set and a browser engine is missing: ${(['chromium', 'firefox', 'webkit'] as const).filter((e) => !present.includes(e)).join(', ')} (.ci/run installs chromium, firefox-esr, webkit2gtk-driver and xvfb)`,
    );
  return present;
}

export async function launch(engine: EngineName): Promise<EnginePage> {
  return engine === 'webkit' ? launchWebKit() : launchPuppeteer(engine);
}

async function launchPuppeteer(engine: 'chromium' | 'firefox'): Promise<EnginePage> {
  const puppeteer = (await import('puppeteer-core')).default;
  const browser = await puppeteer.launch({
    browser: engine === 'firefox' ? 'firefox' : 'chrome',
    executablePath: ENGINE_PATHS[engine],
    headless: true,
    args:
      engine === 'chromium'
        ? ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync']
        : [],
  });
  const page = await browser.newPage();
  return {
    engine,
    async goto(url) {
      await page.goto(url, { waitUntil: 'load' });
    },
    evaluate: (fn, ...args) => page.evaluate(fn as never, ...(args as unknown as never[])),
    version: () => browser.version(),
    close: () => browser.close(),
  };
}

/** An X display of its own for MiniBrowser, which has no headless mode: Xvfb picks a free number. */
async function startXvfb(): Promise<{ display: string; process: ChildProcess }> {
  const xvfb = spawn(XVFB, ['-displayfd', '3', '-screen', '0', '1280x800x24', '-nolisten', 'tcp'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  });
  const display = await new Promise<string>((resolve, reject) => {
    let out = '';
    xvfb.stdio[3]!.on('data', (chunk: Buffer) => {
      out += String(chunk);
      if (out.includes('\n')) resolve(`:${out.trim()}`);
    });
    xvfb.once('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it listened`)));
  });
  return { display, process: xvfb };
}

async function launchWebKit(): Promise<EnginePage> {
  const xvfb = await startXvfb();
  const port = await freePort();
  const driver = spawn(ENGINE_PATHS.webkit, [`--port=${port}`, '--host=127.0.0.1'], {
    stdio: 'ignore',
    env: { ...process.env, DISPLAY: xvfb.display },
  });
  const base = `http://127.0.0.1:${port}`;
  /** One WebDriver command; rejects with the driver's error. */
  const command = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(base + path, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    const { value } = (await response.json()) as { value: unknown };
    if (!response.ok) {
      const { error, message } = value as { error: string; message: string };
      throw new Error(`WebKitWebDriver ${method} ${path}: ${error}: ${message}`);
    }
    return value;
  };
  const stop = () => {
    driver.kill();
    xvfb.process.kill();
  };
  try {
    // The driver listens a moment after it starts.
    for (let tries = 0; ; tries++) {
      const ready = await fetch(`${base}/status`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      if (tries > 100) throw new Error('WebKitWebDriver did not start');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const session = (await command('POST', '/session', {
      capabilities: {
        alwaysMatch: {
          browserName: 'MiniBrowser',
          'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
          timeouts: { script: 60_000, pageLoad: 60_000 },
        },
      },
    })) as { sessionId: string; capabilities: { browserVersion: string } };
    const path = `/session/${session.sessionId}`;
    return {
      engine: 'webkit',
      async goto(url) {
        await command('POST', `${path}/url`, { url });
      },
      async evaluate(fn, ...args) {
        // Execute Script awaits a promise the script returns.
        return (await command('POST', `${path}/execute/sync`, {
          script: `return (${fn.toString()})(...arguments);`,
          args,
        })) as never;
      },
      version: async () => `WebKitGTK ${session.capabilities.browserVersion}`,
      async close() {
        await command('DELETE', path).catch(() => undefined);
        stop();
      },
    };
  } catch (error) {
    stop();
    throw error;
  }
}
