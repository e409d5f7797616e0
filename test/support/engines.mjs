/**
 * One page API over the three browser engines a shopper uses, so that one spec runs in each:
 * Chromium and Firefox through puppeteer-core (CDP and WebDriver BiDi), WebKit through
 * WebKitGTK's WebDriver (classic, spoken here over fetch) with MiniBrowser in an Xvfb display.
 * All three are Debian's packages: nothing is downloaded at test time.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { freePort } from './processes.mjs';

/** The engines, in the order every spec and the benchmark run them (types: engines.d.mts). */
export const ENGINES = ['chromium', 'firefox', 'webkit'];

/** Where libwebkit2gtk-4.1-0 puts MiniBrowser: under the machine's own multiarch folder. */
function debianMiniBrowser() {
  const arch = existsSync('/usr/lib')
    ? readdirSync('/usr/lib').find((name) => /-linux-gnu(eabihf)?$/.test(name))
    : undefined;
  return `/usr/lib/${arch ?? 'x86_64-linux-gnu'}/webkit2gtk-4.1/MiniBrowser`;
}

/** Where each engine's program is: Debian's packages, or the path an environment variable names. */
export function enginePaths(env = process.env) {
  return {
    chromium: env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    firefox: env.FIREFOX_PATH ?? '/usr/bin/firefox-esr',
    webkit: env.WEBKIT_DRIVER_PATH ?? '/usr/bin/WebKitWebDriver',
    /** WebKitGTK's own browser, which the driver starts; it has no headless mode, so an Xvfb display. */
    miniBrowser: env.MINIBROWSER_PATH ?? debianMiniBrowser(),
    xvfb: env.XVFB_PATH ?? '/usr/bin/Xvfb',
  };
}

/** The engines present on this machine. With CI set a missing one is an error, never a skip. */
export function availableEngines(env = process.env) {
  const paths = enginePaths(env);
  const present = ENGINES.filter(
    (engine) =>
      existsSync(paths[engine]) && (engine !== 'webkit' || (existsSync(paths.miniBrowser) && existsSync(paths.xvfb))),
  );
  const missing = ENGINES.filter((engine) => !present.includes(engine));
  if (env.CI && missing.length)
    throw new Error(
      `CI is set and a browser engine is missing: ${missing.join(', ')} (.ci/run installs chromium, firefox-esr, webkit2gtk-driver and xvfb)`,
    );
  return present;
}

export async function launch(engine) {
  return engine === 'webkit' ? launchWebKit() : launchPuppeteer(engine);
}

async function launchPuppeteer(engine) {
  const puppeteer = (await import('puppeteer-core')).default;
  const browser = await puppeteer.launch({
    browser: engine === 'firefox' ? 'firefox' : 'chrome',
    executablePath: enginePaths()[engine],
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
    evaluate: (fn, ...args) => page.evaluate(fn, ...args),
    async screenshot(file, { width, height }) {
      await page.setViewport({ width, height });
      await page.screenshot({ path: file, fullPage: true });
    },
    version: () => browser.version(),
    close: () => browser.close(),
  };
}

/**
 * An X display of its own for MiniBrowser, which has no headless mode: Xvfb picks a free number.
 * Tall, so that a screenshot can hold a whole page: the window cannot grow past the screen.
 */
async function startXvfb() {
  const xvfb = spawn(enginePaths().xvfb, ['-displayfd', '3', '-screen', '0', '1280x3200x24', '-nolisten', 'tcp'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  });
  const display = await new Promise((resolve, reject) => {
    let out = '';
    xvfb.stdio[3].on('data', (chunk) => {
      out += String(chunk);
      if (out.includes('\n')) resolve(`:${out.trim()}`);
    });
    xvfb.once('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it listened`)));
  });
  return { display, process: xvfb };
}

async function launchWebKit() {
  const xvfb = await startXvfb();
  const port = await freePort();
  const { webkit, miniBrowser } = enginePaths();
  const driver = spawn(webkit, [`--port=${port}`, '--host=127.0.0.1'], {
    stdio: 'ignore',
    env: { ...process.env, DISPLAY: xvfb.display },
  });
  const base = `http://127.0.0.1:${port}`;
  /** One WebDriver command; rejects with the driver's error. */
  const command = async (method, path, body) => {
    const response = await fetch(base + path, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    const { value } = await response.json();
    if (!response.ok) {
      const { error, message } = value;
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
    const session = await command('POST', '/session', {
      capabilities: {
        alwaysMatch: {
          browserName: 'MiniBrowser',
          'webkitgtk:browserOptions': { binary: miniBrowser, args: ['--automation'] },
          timeouts: { script: 60_000, pageLoad: 60_000 },
        },
      },
    });
    const path = `/session/${session.sessionId}`;
    return {
      engine: 'webkit',
      async goto(url) {
        await command('POST', `${path}/url`, { url });
      },
      async evaluate(fn, ...args) {
        // Execute Script awaits a promise the script returns.
        return command('POST', `${path}/execute/sync`, { script: `return (${fn.toString()})(...arguments);`, args });
      },
      async screenshot(file, { width, height }) {
        // A window as tall as the page (the browser's own bars aside), within the screen: WebDriver captures the viewport only.
        await command('POST', `${path}/window/rect`, { width, height });
        const page = await command('POST', `${path}/execute/sync`, {
          script: 'return document.documentElement.scrollHeight;',
          args: [],
        });
        if (page > height) await command('POST', `${path}/window/rect`, { width, height: Math.min(3100, page + 60) });
        const png = await command('GET', `${path}/screenshot`);
        await (await import('node:fs/promises')).writeFile(file, Buffer.from(png, 'base64'));
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
