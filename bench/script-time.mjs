// The package's own script time before the loader request, against the loader's alone: main-thread
// time (DevTools TaskDuration, thread ticks) of a page that runs the README's smallest call from
// the ESM bundle a user's bundler emits (scripts/size.mjs's bundle), less that of the same page
// with an empty module; the same for a page that runs the vendor's loader alone, less an empty
// classic script's. Every file comes from memory (no
// network time); the loader URL the call injects answers a stand-in that marks the loader as run,
// so that nothing of ours runs after the call. With and without V8's compile hint
// (`//# allFunctionsCalledOnLoad`, the first line of dist/index.js: a user's bundler drops it).
import { chromium } from '@playwright/test';
import { bundle } from '../scripts/size.mjs';
import { median } from './site.mjs';

const HINT = '//# allFunctionsCalledOnLoad\n';
const ORIGIN = 'https://shop.test';
/** The README's smallest call (blackbox-capture/lean), and the same call of the full entry. */
const MINIMAL = `import { captureBlackbox } from './dist/lean.js'; captureBlackbox({ loaderUrl: '/l.js' }).catch(() => {});`;
const MAIN_MINIMAL = MINIMAL.replace('lean.js', 'index.js');

/** Median main-thread ms per variant, and ours ÷ the loader's. */
export async function benchScriptTime({ rounds = 20, loaderSource }) {
  // The up-front files joined into one module: what runs before the loader request.
  const ours = (await bundle(MINIMAL)).upfront.join('\n').replace(HINT, '');
  const main = (await bundle(MAIN_MINIMAL)).upfront.join('\n').replace(HINT, '');
  const files = {
    '/ours-hint.js': HINT + ours,
    '/ours.js': ours,
    '/main-hint.js': HINT + main,
    '/loader.js': loaderSource,
    '/l.js': 'window.IGLOO.loader.loaderMain = 1;',
    // What any integration does before the loader request: the config object and the loader tag.
    '/tag.js':
      "window.IGLOO = { loader: {} }; const tag = document.createElement('script'); tag.async = true; tag.src = '/l.js'; document.head.append(tag);",
    '/empty.js': '',
  };
  const page = (script) => `<!doctype html><html><head><meta charset="utf-8">${script}</head><body></body></html>`;
  // Each script against the same page with an empty script of its kind: the module machinery
  // and the fetch are the page's, not the script's.
  const pages = {
    'empty module': page('<script type="module" src="/empty.js"></script>'),
    'empty script': page('<script src="/empty.js"></script>'),
    'package, compile hint': page('<script type="module" src="/ours-hint.js"></script>'),
    'package, as bundled': page('<script type="module" src="/ours.js"></script>'),
    'full entry, compile hint': page('<script type="module" src="/main-hint.js"></script>'),
    'config object and loader tag alone': page('<script type="module" src="/tag.js"></script>'),
    'vendor loader alone': page('<script src="/loader.js"></script>'),
  };
  const baseline = { 'vendor loader alone': 'empty script' };
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'],
  });
  const taskMs = Object.fromEntries(Object.keys(pages).map((name) => [name, []]));
  try {
    for (let round = -1; round < rounds; round++) {
      for (const [name, html] of Object.entries(pages)) {
        const context = await browser.newContext();
        await context.route('**/*', (route) => {
          const { pathname } = new URL(route.request().url());
          if (pathname === '/') return route.fulfill({ contentType: 'text/html', body: html });
          const body = files[pathname];
          return body === undefined
            ? route.fulfill({ status: 404, body: '' })
            : route.fulfill({ contentType: 'text/javascript', body });
        });
        const tab = await context.newPage();
        const cdp = await context.newCDPSession(tab);
        await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
        await tab.goto(ORIGIN + '/', { waitUntil: 'load' });
        const metrics = Object.fromEntries(
          (await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]),
        );
        if (round >= 0) taskMs[name].push(metrics.TaskDuration * 1000);
        await context.close();
      }
    }
  } finally {
    await browser.close();
  }
  const added = Object.fromEntries(
    Object.entries(taskMs)
      .filter(([name]) => !name.startsWith('empty'))
      .map(([name, xs]) => [name, median(xs) - median(taskMs[baseline[name] ?? 'empty module'])]),
  );
  return {
    rounds,
    ms: added,
    ratioToLoader: added['package, compile hint'] / added['vendor loader alone'],
    ratioToLoaderAsBundled: added['package, as bundled'] / added['vendor loader alone'],
    ratioToLoaderFullEntry: added['full entry, compile hint'] / added['vendor loader alone'],
    // What the package adds to what any integration does before the loader request.
    beyondTagMs: added['package, compile hint'] - added['config object and loader tag alone'],
  };
}
