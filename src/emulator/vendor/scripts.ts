/**
 * The emulated vendor scripts: a loader that behaves like the public loader 5.2.2
 * and the collection scripts it loads. Everything is plain ES5 text, because it
 * runs in the page exactly as the vendor's files do, never through our bundle.
 */

export const EMULATED_LOADER_VERSION = '5.2.2';

/** The three collection sources, as they appear in an emulated blackbox. */
export type CollectionSource = 'fp_static' | 'fp_dyn' | 'tp' | 'tp_static' | 'tp_dyn';

export interface LoaderScriptOptions {
  /** Third-party host the loader uses when `loader.tp_host` is not set. */
  defaultTpHost: string;
}

/**
 * The loader. Behaviour copied from the field notes: global name, run-once guard,
 * boolean parsing, URL shapes with their query string, the switches, the
 * `*_load_failure` flags and the trace messages.
 */
export function loaderScript(options: LoaderScriptOptions): string {
  return `/* emulated device-intelligence loader ${EMULATED_LOADER_VERSION} (blackbox-capture emulator) */
(function () {
  var w = window, d = document;
  var name = w.io_global_object_name || "IGLOO";
  var cfg = w[name] = w[name] || {};
  var L = cfg.loader = cfg.loader || {};
  function trace(m) {
    if (typeof L.trace_handler === "function") { try { L.trace_handler(m); } catch (e) {} }
  }
  if (L.loaderMain) {
    trace("loader: Loader script has already run, ignoring this copy. Configuration changes made after the first run have no effect.");
    return;
  }
  function bool(v, def) {
    if (v === true || v === "1" || v === "true" || v === 1) return true;
    if (v === false || v === "0" || v === "false" || v === 0) return false;
    return def;
  }
  var ver = "${EMULATED_LOADER_VERSION}";
  var version = L.version ? String(L.version) : "versionOrAliasIsRequired";
  if (!L.version) trace("loader: version is required");
  var subkey = L.subkey ? encodeURIComponent(String(L.subkey)) : "";
  var hook = L.uri_hook === undefined ? "/iojs/" : String(L.uri_hook);
  var tp = bool(L.tp, true), fpStatic = bool(L.fp_static, true), fpDyn = bool(L.fp_dyn, true);
  var split = bool(L.tp_split, false), compat = bool(L.enable_legacy_compatibility, false);
  var flash = bool(cfg.enable_flash, true);
  if (fpDyn && !fpStatic) { trace("loader: fp_dyn is invalid without fp_static; not loading the dynamic first-party script"); fpDyn = false; }
  var q = "?loaderVer=" + ver + "&compat=" + compat + "&tp=" + tp + "&tp_split=" + split +
    "&fp_static=" + fpStatic + "&fp_dyn=" + fpDyn + "&flash=" + flash;
  var tpHost = L.tp_host || ${JSON.stringify(options.defaultTpHost)};
  var tpResource = L.tp_resource || "wdp.js";
  var fpBase = (hook + "/" + version + "/" + subkey + "/").replace(/\\/\\//g, "/");
  var tpBase = tpHost + "/" + version + "/" + subkey + "/";

  /* Shared state of the collection scripts: which are pending, what each contributed. */
  var main = L.loaderMain = { pending: {}, parts: {}, order: [], done: false, bb: "" };
  L.loaderVer = ver;
  cfg.getBlackbox = function () { return { blackbox: main.bb, finished: main.done }; };
  function anyPending() { for (var k in main.pending) if (main.pending[k]) return true; return false; }
  function emit() {
    var complete = !anyPending() && main.order.length > 0;
    if (complete) main.done = true;
    if (typeof cfg.bb_callback === "function") {
      cfg.bb_callback(main.bb, complete);
    } else if (cfg.bbout_element_id) {
      var el = d.getElementById(cfg.bbout_element_id);
      if (el) el.value = main.bb;
    }
    if (complete) trace("loader: collection complete");
  }
  main.contribute = function (source, data, last) {
    if (main.done) return;
    if (!main.parts[source]) main.order.push(source);
    main.parts[source] = (main.parts[source] || "") + data;
    if (last) main.pending[source] = 0;
    main.bb = main.encode();
    emit();
  };
  /* "~~~" and "???" make the base64 carry "+" and "/", as real blackboxes do. */
  var filler = "";
  while (filler.length < 800) filler += Math.random().toString(36).slice(2);
  main.encode = function () {
    var o = { v: ver, s: main.order, p: main.parts, m: "~~~~~~~~~?????????" };
    var json = JSON.stringify(o);
    if (json.length < 760) { o.x = filler.slice(0, 760 - json.length - 7); json = JSON.stringify(o); }
    return "0400" + w.btoa(json);
  };
  function add(src, flag, source, label) {
    var s = d.createElement("script");
    main.pending[source] = 1;
    s.onerror = function () {
      L[flag] = "true";
      main.pending[source] = 0;
      trace("loader: failed to load " + label + " " + src);
      if (!anyPending() && main.order.length > 0 && !main.done) emit();
    };
    s.onload = function () { trace("loader: loaded " + label); };
    s.setAttribute("src", src);
    (d.head || d.getElementsByTagName("head")[0]).appendChild(s);
  }
  trace("loader: " + ver + " starting with version " + version);
  if (fpStatic) add(L.fp_static_override_uri || fpBase + "static_wdp.js" + q, "fp_static_wdp_load_failure", "fp_static", "first-party static script");
  if (fpDyn) add(fpBase + "dyn_wdp.js" + q, "fp_dyn_wdp_load_failure", "fp_dyn", "first-party dynamic script");
  if (tp) {
    if (split) {
      add(tpBase + "static_wdp.js" + q, "io_static_wdp_load_failure", "tp_static", "third-party static script");
      add(tpBase + "dyn_wdp.js" + q, "io_dyn_wdp_load_failure", "tp_dyn", "third-party dynamic script");
    } else {
      add(tpBase + tpResource + q, "io_wdp_load_failure", "tp", "third-party script");
    }
  }
})();
`;
}

export interface CollectionScriptOptions {
  source: CollectionSource;
  /** Delays before each contribution; the last one finishes this script. */
  delaysMs: readonly number[];
  /** Values the server embeds per request (user agent, language, a token). */
  embedded: Record<string, string>;
  /** Random bytes (base64) that make every blackbox unique, like real ones. */
  entropy: string;
}

/**
 * One collection script. It contributes a base64 chunk to the loader's shared
 * state once per delay; the loader turns the parts into the blackbox.
 */
export function collectionScript(options: CollectionScriptOptions): string {
  const embedded: Record<string, string> = {};
  for (const [key, value] of Object.entries(options.embedded)) embedded[key] = value.slice(0, 200);
  // btoa() in the page takes Latin-1 only: escape everything else.
  const payload = JSON.stringify({ s: options.source, ...embedded }).replace(
    /[\u007f-\uffff]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'),
  );
  return `/* emulated collection script: ${options.source} */
(function () {
  var w = window;
  var cfg = w[w.io_global_object_name || "IGLOO"];
  var main = cfg && cfg.loader && cfg.loader.loaderMain;
  if (!main || !main.contribute) return;
  var delays = ${JSON.stringify(options.delaysMs)};
  var payload = ${JSON.stringify(payload)};
  var entropy = ${JSON.stringify(options.entropy)};
  var per = Math.ceil(entropy.length / delays.length);
  delays.forEach(function (ms, i) {
    setTimeout(function () {
      var chunk = (i === 0 ? payload + "|" : "") + entropy.slice(i * per, (i + 1) * per);
      main.contribute(${JSON.stringify(options.source)}, chunk, i === delays.length - 1);
    }, ms);
  });
})();
`;
}
