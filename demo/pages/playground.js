// The playground: every update as it arrives, traces, timings, delivery and the service's status.
import { captureBlackbox } from '/dist/index.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const ms = (t) => `${Math.round(t)} ms`;

// Reflect the switches in the form.
$('blockTp').checked = params.get('blockTp') === '1';
$('proxy').value = params.get('proxy') ?? 'ok';
$('globalName').value = params.get('globalName') ?? '';
$('timeoutMs').value = params.get('timeoutMs') ?? '';

let updates = 0;
const attempts = [];
const options = {
  loaderUrl: $('playground').dataset.loaderUrl,
  field: 'bb',
  onUpdate(blackbox, complete) {
    updates++;
    if (updates === 1) $('t-first').textContent = ms(performance.now());
    const bar = document.createElement('span');
    bar.style.height = `${Math.max(6, Math.round((blackbox.length / 1500) * 48))}px`;
    bar.title = `${blackbox.length} characters${complete ? ' (final)' : ''}`;
    if (complete) bar.className = 'final';
    $('bars').append(bar);
    $('update-summary').textContent = `${updates} so far, latest ${blackbox.length} characters`;
    if (complete) $('t-final').textContent = ms(performance.now());
  },
  onTrace(message) {
    const item = document.createElement('li');
    item.textContent = `${ms(performance.now())}  ${message}`;
    $('trace').append(item);
  },
  post: {
    url: '/device-risk',
    async fetch(url, init) {
      const started = performance.now();
      try {
        const response = await fetch(url, init);
        attempts.push(`${response.status} in ${ms(performance.now() - started)}`);
        if (response.ok) watch(await response.clone().json());
        return response;
      } catch (error) {
        attempts.push(`network error in ${ms(performance.now() - started)}`);
        throw error;
      } finally {
        $('delivery').textContent = `attempts: ${attempts.join(', ')}`;
      }
    },
  },
};
if (params.get('globalName')) options.globalName = params.get('globalName');
if (params.get('timeoutMs')) options.timeoutMs = Number(params.get('timeoutMs'));
if (params.get('proxy') === '404') options.uriHook = '/broken-404/iojs';
if (params.get('proxy') === 'html') options.uriHook = '/broken-html/iojs';
// A closed local port stands in for a host an ad blocker refuses.
if (params.get('blockTp') === '1') options.vendor = { tp_host: 'http://127.0.0.1:9' };

/** Polls the service's status of the delivered transaction until it is final. */
async function watch(result) {
  $('transaction').textContent = `${result.status} (${result.workflowExecutionId})`;
  for (let i = 0; i < 20 && !['PROCESSED', 'SESSION_EXPIRED', 'TOKEN_EXPIRED'].includes(result.status); i++) {
    await new Promise((r) => setTimeout(r, 500));
    const query = new URLSearchParams({ accountId: result.accountId, workflowExecutionId: result.workflowExecutionId });
    result = { ...result, ...(await (await fetch(`/demo/status?${query}`)).json()) };
    $('transaction').textContent = `${result.status} (${result.workflowExecutionId})`;
  }
}

$('t-start').textContent = ms(performance.now());
window.capture = captureBlackbox(options).then(
  (blackbox) => {
    $('outcome').innerHTML = `<span class="ok">final blackbox, ${blackbox.length} characters</span>`;
    $('t-delivered').textContent = ms(performance.now());
    return { blackbox };
  },
  (error) => {
    $('outcome').innerHTML = '';
    const span = document.createElement('span');
    span.className = 'bad';
    span.textContent = `${error.code}: ${error.message}`;
    $('outcome').append(span);
    return { code: error.code, message: error.message, blackbox: error.blackbox };
  },
);
