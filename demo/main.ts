/** `npm run demo`: the whole flow on one machine; Ctrl-C stops everything. */
import { configFromEnvironment, ENVIRONMENT } from './config.js';
import { startDemo } from './app.js';

async function main() {
  const config = configFromEnvironment();
  const demo = await startDemo(config);
  const service = demo.settings.service === 'emulator' ? 'the built-in emulator' : demo.settings.service;
  console.log(`blackbox-capture demo on ${service}

  Open ${demo.url}/

  ${demo.url}/checkout-element   the <blackbox-capture> element in a plain HTML form
  ${demo.url}/checkout           plain HTML form, UMD script tag, data attributes only
  ${demo.url}/spa                single-page app, ES module import, client-side routes
  ${demo.url}/playground         every update, timings, traces, and switches to break things

Settings come from the environment (${Object.keys(ENVIRONMENT).join(', ')}).
Ctrl-C stops it.`);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void demo.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: Error) => {
  console.error(`demo: ${error.message}`);
  process.exit(1);
});
