/**
 * A consent management platform stub with the IAB TCF v2 `__tcfapi` contract, for the
 * consent tests of both browser layers: its UI is shown until the page calls
 * `window.choose(vendorConsent)`, which tells every listener the shopper's choice for
 * vendor 810 (purpose 1 granted).
 */
export const CMP_STUB = `<script>
  let data = { gdprApplies: true, eventStatus: 'cmpuishown', vendor: { consents: {} }, purpose: { consents: {} } };
  const listeners = new Map(); let next = 1;
  window.__tcfapi = (command, version, callback, id) => {
    if (command === 'addEventListener') { const n = next++; listeners.set(n, callback); callback({ ...data, listenerId: n }, true); }
    if (command === 'removeEventListener') { listeners.delete(id); callback(true); }
  };
  window.choose = (vendor) => {
    data = { ...data, eventStatus: 'useractioncomplete', vendor: { consents: { 810: vendor } }, purpose: { consents: { 1: true } } };
    for (const [n, listener] of listeners) listener({ ...data, listenerId: n }, true);
  };
</script>`;
