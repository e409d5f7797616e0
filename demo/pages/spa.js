// A small single-page app: the ES module import, client-side routes, one capture for the page.
import { captureBlackbox } from '/dist/index.js';

const app = document.getElementById('app');
let delivery = { state: 'collecting' };

// One options object for the app's lifetime: every view that asks gets the same promise.
const options = {
  loaderUrl: app.dataset.loaderUrl,
  post: {
    url: '/device-risk',
    // Keep the server's answer for display; retries and idempotency stay the package's job.
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      if (response.ok) delivery = { state: 'delivered', result: await response.clone().json() };
      return response;
    },
  },
};
const capture = () => captureBlackbox(options);

const views = {
  '/spa': () => `<h1>Cart</h1><p>Espresso machine, CHF 349.00</p>
    <p><a class="button" href="/spa/checkout" data-link>Go to checkout</a></p>`,
  '/spa/checkout': () => `<h1>Checkout</h1>
    <p>Device check: <strong id="device-check">${label()}</strong></p>
    <p class="muted">Loader tags on this page: <span id="loader-tags">${document.querySelectorAll('script[src*="loader.js"]').length}</span></p>
    <p><a href="/spa" data-link>Back to cart</a> · <a class="button" href="/spa/done" data-link>Place order</a></p>`,
  '/spa/done': () => `<h1>Thank you</h1><p>Device check: <strong id="device-check">${label()}</strong></p>
    <p><a href="/spa" data-link>Start over</a></p>`,
};

function label() {
  if (delivery.state === 'delivered') return `delivered, ${delivery.result.status}`;
  if (delivery.state === 'failed') return `failed: ${delivery.code}`;
  return 'collecting…';
}

function render() {
  app.innerHTML = (views[location.pathname] ?? views['/spa'])();
  // Each view asks for the capture again, as a component would on mount: same promise, no new tag.
  capture().then(
    () => {
      const el = document.getElementById('device-check');
      if (el) el.textContent = label();
    },
    (error) => {
      delivery = { state: 'failed', code: error.code };
      const el = document.getElementById('device-check');
      if (el) el.textContent = label();
    },
  );
}

document.addEventListener('click', (event) => {
  const link = event.target.closest('a[data-link]');
  if (!link) return;
  event.preventDefault();
  history.pushState(null, '', link.getAttribute('href'));
  render();
});
addEventListener('popstate', render);
render();
