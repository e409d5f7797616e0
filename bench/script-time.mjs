// The package's own script time before the loader request, against the loader's alone.
// Main-thread thread time (CPU time of the renderer's main thread, so a busy machine's waits do
// not count) from a trace of each page load (category devtools.timeline only):
// - a module (ours, or the plain integration's): its compile, then its evaluation up to the
//   moment the loader request is sent (ResourceSendRequest), which the evaluation holds;
// - the vendor's loader alone, a classic script: its compile and evaluation (EvaluateScript).
// Ours is the README's smallest call bundled as a user's bundler emits it (scripts/size.mjs's
// bundle), with and without V8's compile hint (`//# allFunctionsCalledOnLoad`, the first line of
// dist/lean.js and dist/index.js: a user's bundler drops it). The plain integration writes the
// config object and adds the loader tag, as any integration does before the loader request: the
// package's own time is ours less it.
// Each load is a new browser context traced over the DevTools protocol at the browser level,
// attached to no page: a client attached to the page (Playwright's) records every request's
// initiator stack, which costs the script that makes the request (ours, the deeper stack) a
// millisecond that a shopper never pays.
// The pages come from a server on 127.0.0.1; the loader URL the call injects answers a stand-in
// that marks the loader as run.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundle } from '../scripts/size.mjs';
import { median, quantile } from './site.mjs';

const HINT = '//# allFunctionsCalledOnLoad\n';
/** The README's smallest call (blackbox-capture/lean), and the same call of the full entry. */
const MINIMAL = `import { captureBlackbox } from './dist/lean.js'; captureBlackbox({ loaderUrl: '/l.js' }).catch(() => {});`;
const MAIN_MINIMAL = MINIMAL.replace('lean.js', 'index.js');
/** What any integration does before the loader request: the config object and the loader tag. */
const PLAIN =
  "window.IGLOO = { loader: {} }; const tag = document.createElement('script'); tag.async = true; tag.src = '/l.js'; document.head.append(tag);";
const urlOf = (event) => event.args?.data?.url ?? '';

/**
 * The main-thread trace events of the renderer that ran `src` (a navigation may change
 * renderers: the page's is the one whose main thread compiled the script).
 */
function mainThread(events, src) {
  const ran = events.find(
    (e) => (e.name === 'v8.compileModule' || e.name === 'EvaluateScript') && urlOf(e).endsWith(src),
  );
  if (!ran) throw new Error(`${src}: not run in the trace`);
  return events.filter((e) => e.pid === ran.pid && e.tid === ran.tid);
}

/** Thread ms of module `src`: its compile, and its evaluation until the loader request. */
function moduleMs(events, src) {
  const compile = events.find((e) => e.name === 'v8.compileModule' && urlOf(e).endsWith(src));
  const evaluation = events.find((e) => e.name === 'v8.evaluateModule' && e.ph === 'X' && e.ts >= compile.ts);
  const request = events.find((e) => e.name === 'ResourceSendRequest' && urlOf(e).endsWith('/l.js'));
  const held = request && request.tts >= evaluation.tts && request.tts <= evaluation.tts + evaluation.tdur;
  if (!held) throw new Error(`${src}: the loader request was not sent during the module's evaluation`);
  return (compile.tdur + (request.tts - evaluation.tts)) / 1000;
}

/** Thread ms of classic script `src`: its compile and evaluation. */
function classicMs(events, src) {
  const runs = events.filter((e) => e.name === 'EvaluateScript' && urlOf(e).endsWith(src));
  if (runs.length === 0) throw new Error(`${src}: no evaluation traced`);
  return runs.reduce((total, e) => total + e.tdur, 0) / 1000;
}

/** Median thread ms per variant, ours less the plain integration's, and ours ÷ the loader's. */
export async function benchScriptTime({ rounds = 20, loaderSource }) {
  // The up-front files joined into one module: what runs before the loader request.
  const ours = (await bundle(MINIMAL)).upfront.join('\n').replace(HINT, '');
  const main = (await bundle(MAIN_MINIMAL)).upfront.join('\n').replace(HINT, '');
  const files = {
    '/ours-hint.js': HINT + ours,
    '/ours.js': ours,
    '/main-hint.js': HINT + main,
    '/plain.js': PLAIN,
    '/loader.js': loaderSource,
    '/l.js': 'window.IGLOO.loader.loaderMain = 1;',
  };
  const variants = {
    'package, compile hint': ['/ours-hint.js', moduleMs],
    'package, as bundled': ['/ours.js', moduleMs],
    'full entry, compile hint': ['/main-hint.js', moduleMs],
    'config object and loader tag alone': ['/plain.js', moduleMs],
    'vendor loader alone': ['/loader.js', classicMs],
  };
  const pages = Object.fromEntries(
    Object.entries(variants).map(([name, [src, measure]]) => [
      `/${encodeURIComponent(name)}`,
      `<!doctype html><html><head><meta charset="utf-8"><script${measure === moduleMs ? ' type="module"' : ''} src="${src}"></script></head><body onload="navigator.sendBeacon('/loaded')"></body></html>`,
    ]),
  );
  // A load has done its part when its page has loaded: it says so with a beacon.
  let done = () => {};
  const server = createServer((request, response) => {
    if (request.url === '/loaded') done();
    const page = pages[request.url];
    const body = page ?? files[request.url];
    response.writeHead(body === undefined ? 404 : 200, {
      'content-type': page ? 'text/html' : 'text/javascript',
      'cache-control': 'no-store',
    });
    response.end(body ?? '');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const times = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  const browser = await startBrowser();
  try {
    for (let round = -1; round < rounds; round++) {
      for (const [name, [src, measure]] of Object.entries(variants)) {
        const loaded = new Promise((resolve) => (done = resolve));
        const events = await browser.traceLoad(`${origin}/${encodeURIComponent(name)}`, loaded);
        // The first round warms the machine's caches (the binary, the fonts), not the page's:
        // every load is a new browser with a new profile.
        if (round >= 0) times[name].push(measure(mainThread(events, src), src));
      }
    }
  } finally {
    await browser.close();
    server.close();
  }
  const ms = Object.fromEntries(Object.entries(times).map(([name, xs]) => [name, median(xs)]));
  const loader = ms['vendor loader alone'];
  const plain = ms['config object and loader tag alone'];
  return {
    rounds,
    ms,
    // Each round's spread: the 10th and 90th percentiles.
    spread: Object.fromEntries(
      Object.entries(times).map(([name, xs]) => [name, [quantile(xs, 0.1), quantile(xs, 0.9)]]),
    ),
    ratioToLoader: ms['package, compile hint'] / loader,
    ratioToLoaderAsBundled: ms['package, as bundled'] / loader,
    ratioToLoaderFullEntry: ms['full entry, compile hint'] / loader,
    // The package's own: what it adds to what any integration does before the loader request.
    ownMs: ms['package, compile hint'] - plain,
    ownMsFullEntry: ms['full entry, compile hint'] - plain,
    ownRatioToLoader: (ms['package, compile hint'] - plain) / loader,
  };
}

/**
 * One Chromium for every load, driven over the DevTools protocol at the browser level only: it
 * traces each load in a context of its own, and attaches to no page.
 */
async function startBrowser() {
  const dir = await mkdtemp(join(tmpdir(), 'script-time-'));
  const process_ = spawn(
    process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--remote-debugging-port=0',
      `--user-data-dir=${dir}`,
      'about:blank',
    ],
    { stdio: 'ignore' },
  );
  let port;
  for (let waited = 0; !port; waited += 100) {
    port = (await readFile(join(dir, 'DevToolsActivePort'), 'utf8').catch(() => '')).split('\n');
    if (port.length < 2) port = undefined;
    if (waited > 30_000) throw new Error('Chromium did not open its DevTools port');
    if (!port) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // Node's own WebSocket client (Node 22 and later).
  const socket = new globalThis.WebSocket(`ws://127.0.0.1:${port[0]}${port[1]}`);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let lastId = 0;
  const pending = new Map();
  const listeners = new Set();
  socket.onmessage = ({ data }) => {
    const message = JSON.parse(data);
    if (message.id === undefined) for (const listener of listeners) listener(message);
    else if (message.error) pending.get(message.id).reject(new Error(message.error.message));
    else pending.get(message.id)?.resolve(message.result);
  };
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = ++lastId;
      pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params }));
    });
  return {
    /** The trace events of one load of `url`, in a new context; `loaded` resolves when it has done its part. */
    async traceLoad(url, loaded) {
      const events = [];
      const complete = new Promise((resolve) => {
        const listener = (message) => {
          if (message.method === 'Tracing.dataCollected') events.push(...message.params.value);
          if (message.method === 'Tracing.tracingComplete') {
            listeners.delete(listener);
            resolve();
          }
        };
        listeners.add(listener);
      });
      const { browserContextId } = await send('Target.createBrowserContext');
      await send('Tracing.start', { traceConfig: { includedCategories: ['devtools.timeline'] } });
      await send('Target.createTarget', { url, browserContextId });
      await loaded;
      // The page's last tasks after the request its server saw.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await send('Tracing.end');
      await complete;
      await send('Target.disposeBrowserContext', { browserContextId });
      return events;
    },
    async close() {
      socket.close();
      process_.kill('SIGKILL');
      await new Promise((resolve) => (process_.exitCode === null ? process_.once('exit', resolve) : resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
