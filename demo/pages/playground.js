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
$('decide').value = params.get('decide') ?? '';

let updates = 0;
const attempts = [];
/** A capture that ended without a blackbox (its error), and the status of its outcome report: in either order. */
let ended;
let reported;
function showNoBlackbox() {
  if (!ended) return;
  const kept = ended.blackbox ? ' (the partial blackbox is kept in the error)' : '';
  const report = reported ? `; the outcome was reported: HTTP ${reported}` : '';
  $('delivery').textContent = `no blackbox sent: the capture ended with ${ended.code}${kept}${report}`;
}
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
      // A capture without a final blackbox reports its outcome alone: the endpoint records it
      // (202) and calls nothing; there is no transaction to follow.
      if (JSON.parse(init.body).blackbox === undefined) {
        const response = await fetch(url, init);
        reported = response.status;
        showNoBlackbox();
        return response;
      }
      const started = performance.now();
      try {
        const response = await fetch(url, init);
        attempts.push({ status: response.status, ms: performance.now() - started });
        if (response.ok) watch(await response.clone().json());
        return response;
      } catch (error) {
        attempts.push({ status: 'network error', ms: performance.now() - started });
        throw error;
      } finally {
        $('delivery').textContent = describeAttempts();
      }
    },
  },
};
if (params.get('globalName')) options.globalName = params.get('globalName');
if (params.get('timeoutMs')) options.timeoutMs = Number(params.get('timeoutMs'));
if (params.get('degradedGraceMs')) options.degradedGraceMs = Number(params.get('degradedGraceMs'));
// How the capture went: a blackbox can be final and still lack a source (the proxy broken, a blocker).
let told;
options.onOutcome = (outcome) => (told = outcome);
if (params.get('proxy') === '404') options.uriHook = '/broken-404/iojs';
if (params.get('proxy') === 'html') options.uriHook = '/broken-html/iojs';
if (params.get('proxy') === 'cache') options.uriHook = '/broken-cache/iojs';
// A closed local port stands in for a host an ad blocker refuses.
if (params.get('blockTp') === '1') options.vendor = { tp_host: 'http://127.0.0.1:9' };

/** "delivered (HTTP 200) after 1 attempt, 39 ms" or "HTTP 503, retrying (attempt 1, 12 ms)". */
function describeAttempts() {
  const last = attempts.at(-1);
  const count = `${attempts.length} attempt${attempts.length === 1 ? '' : 's'}`;
  const total = ms(attempts.reduce((sum, a) => sum + a.ms, 0));
  const what = typeof last.status === 'number' ? `HTTP ${last.status}` : last.status;
  return last.status === 200 || (typeof last.status === 'number' && last.status < 300)
    ? `delivered (${what}) after ${count}, ${total}`
    : `${what} after ${count}, ${total}; retrying with the same Idempotency-Key`;
}

/** The server's answer (demo only: a real shop keeps it on the server), shown in its labelled panel. */
async function answer(result) {
  const query = new URLSearchParams({ accountId: result.accountId, workflowExecutionId: result.workflowExecutionId });
  $('answer').innerHTML = await (await fetch(`/demo/answer?${query}`)).text();
}

/** Polls the service's status of the delivered transaction until it is final. */
async function watch(result) {
  void answer(result);
  $('transaction').textContent = `${result.status} (${result.workflowExecutionId})`;
  for (let i = 0; i < 20 && !['PROCESSED', 'SESSION_EXPIRED', 'TOKEN_EXPIRED'].includes(result.status); i++) {
    await new Promise((r) => setTimeout(r, 500));
    const query = new URLSearchParams({ accountId: result.accountId, workflowExecutionId: result.workflowExecutionId });
    result = { ...result, ...(await (await fetch(`/demo/status?${query}`)).json()) };
    $('transaction').textContent = `${result.status} (${result.workflowExecutionId})`;
  }
}

// When the package inserts the loader tag (the page's own tag, in adopt mode, is not this).
new MutationObserver((mutations, observer) => {
  for (const { addedNodes } of mutations) {
    for (const node of addedNodes) {
      if (node.tagName === 'SCRIPT' && node.src === new URL(options.loaderUrl, location.href).href) {
        $('t-start').textContent = ms(performance.now());
        observer.disconnect();
      }
    }
  }
}).observe(document.head, { childList: true });
window.capture = captureBlackbox(options).then(
  (blackbox) => {
    const degraded = told && told.outcome !== 'complete';
    const how = degraded ? `${told.outcome}: ${told.scripts.join(', ')} failed` : 'complete';
    $('outcome').innerHTML = '';
    const span = document.createElement('span');
    span.className = degraded ? 'bad' : 'ok';
    span.textContent = `final blackbox, ${blackbox.length} characters (${how}, ${told ? told.durationMs : '?'} ms)`;
    $('outcome').append(span);
    $('t-delivered').textContent = ms(performance.now());
    return { blackbox };
  },
  (error) => {
    $('outcome').innerHTML = '';
    const span = document.createElement('span');
    span.className = 'bad';
    span.textContent = `${error.code}: ${error.message}${told ? ` (outcome ${told.outcome})` : ''}`;
    $('outcome').append(span);
    // Say what became of the delivery: nothing was sent unless the error is the delivery's own.
    if (error.code === 'post_failed') $('delivery').textContent = `failed: ${describeAttempts()}`;
    else {
      ended = error;
      showNoBlackbox();
      // No blackbox, no transaction: nothing to follow, and no answer will come.
      $('transaction').textContent = 'none: no blackbox was sent to the service';
      $('answer').textContent = 'No answer: without a blackbox there is no check to answer.';
    }
    return { code: error.code, message: error.message, blackbox: error.blackbox };
  },
);

// diagnose(): a separate entry, imported on demand, never part of the capture's bundle.
$('diagnose').addEventListener('click', async () => {
  $('diagnosis').innerHTML = '<tr><td>running…</td></tr>';
  const { diagnose } = await import('/dist/diagnose.js');
  const thirdPartyHost = $('playground').dataset.thirdPartyHost || undefined;
  const report = await diagnose({
    loaderUrl: options.loaderUrl,
    prefix: options.uriHook ?? '/iojs',
    thirdPartyHost,
    globalName: options.globalName,
  });
  $('diagnosis').innerHTML = '';
  for (const finding of report.findings) {
    const row = $('diagnosis').insertRow();
    const status = row.insertCell();
    status.textContent = finding.status;
    status.className = finding.status === 'pass' ? 'ok' : 'bad';
    row.insertCell().textContent = finding.id;
    row.insertCell().textContent =
      finding.message + (finding.fix && finding.status !== 'pass' ? ` Fix: ${finding.fix}` : '');
  }
});
