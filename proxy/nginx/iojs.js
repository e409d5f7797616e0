// blackbox-capture: first-party reverse proxy for the device-intelligence scripts, part 3 of 3, in njs.
// Put it beside the two .conf files (/etc/nginx/blackbox-capture/iojs.js); iojs-http.conf
// imports it and iojs-location.conf runs it on every answer under /iojs/. It needs nginx's
// JavaScript module (Debian: apt-get install libnginx-mod-http-js, which loads it).
//
// Back, an allow-list (docs/proxy.md, "The contract in one table"): of the collector's
// headers only these reach the shopper; a header it invents tomorrow does not. nginx's own
// proxy_hide_header can only name headers, one by one. The front's own headers (the caching
// of the dynamic script, the Content-Security-Policy) are added after this filter runs.
var RETURNED_RESPONSE_HEADERS = ['content-type', 'cache-control', 'etag', 'last-modified', 'expires', 'vary'];

/** Deletes every header of the answer whose name is not on the list. */
function answerHeaders(r) {
  Object.keys(r.headersOut).forEach(function (name) {
    if (RETURNED_RESPONSE_HEADERS.indexOf(name.toLowerCase()) === -1) delete r.headersOut[name];
  });
}

export default { answerHeaders: answerHeaders };
