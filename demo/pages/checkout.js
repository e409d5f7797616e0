// The checkout page: the capture's state beside the pay button, and a submit that waits for the
// final blackbox, at most MAX_WAIT_MS, then goes with what there is and says so.
const MAX_WAIT_MS = 3000;
const form = document.getElementById('checkout');
const state = document.getElementById('capture-state');
const outcome = document.getElementById('blackbox-outcome');
const field = document.getElementById('blackbox');

/** collecting, then the capture's outcome: complete, degraded (a collection path failed, the other delivered) or failed. */
function show(name, text) {
  state.dataset.state = name;
  state.textContent = text;
  outcome.value = name;
}

let settle;
const settled = new Promise((resolve) => (settle = resolve));
show('collecting', 'Checking this device…');
document.addEventListener('blackbox', () => {
  // The loader's failure flags say whether a path failed while the other delivered.
  const loader = (window[window.io_global_object_name || 'IGLOO'] || {}).loader || {};
  const failed = Object.keys(loader).filter((key) => /_load_failure$/.test(key) && String(loader[key]) === 'true');
  if (failed.length)
    show(
      'degraded',
      `Device check done, degraded (${failed.map((f) => f.replace('_load_failure', '')).join(', ')} failed)`,
    );
  else show('complete', 'Device check done');
  settle();
});
document.addEventListener('blackboxerror', (event) => {
  show('failed', `Device check failed: ${event.detail.code}`);
  settle();
});

let waited = false;
form.addEventListener('submit', (event) => {
  if (state.dataset.state !== 'collecting' || waited) return;
  // Hold the submit until the blackbox is final, or the bound has passed: never a value still changing.
  event.preventDefault();
  waited = true;
  const button = document.getElementById('pay');
  button.disabled = true;
  button.textContent = 'Finishing the device check…';
  Promise.race([settled, new Promise((resolve) => setTimeout(resolve, MAX_WAIT_MS))]).then(() => {
    if (state.dataset.state === 'collecting')
      show(
        field.value ? 'timeout-partial' : 'failed',
        field.value ? 'Submitted before the device check finished' : 'Submitted without a device check',
      );
    form.requestSubmit();
  });
});
