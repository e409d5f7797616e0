/**
 * The emulated vendor scripts: a loader that behaves like the public loader 5.2.2
 * and the collection scripts it loads. Everything is plain ES5 text, because it
 * runs in the page exactly as the vendor's files do, never through our bundle.
 */
import { BLACKBOX_PREFIX } from '../../shared/constants.js';

export const EMULATED_LOADER_VERSION = '5.2.2';

/** The three collection sources, as they appear in an emulated blackbox. */
export type CollectionSource = 'fp_static' | 'fp_dyn' | 'tp' | 'tp_static' | 'tp_dyn';

export interface LoaderScriptOptions {
  /** Third-party host the loader uses when `loader.tp_host` is not set. */
  defaultTpHost: string;
}

/**
 * The loader. It behaves like the public loader 5.2.2, request for request (docs/vendor-contract.md
 * #the-loader, and the conformance table in conformance.ts is the definition): global name,
 * run-once guard, boolean parsing, two chains (first party, third party) that each
 * append their next script only from the previous one's `load`, the URL shapes with
 * their query string, per-side flash flags, the `<list>_<file>_load_failure` flags and
 * the trace messages, which it sends to the top-level `trace_handler` as 5.2.2 does.
 */
export function loaderScript(options: LoaderScriptOptions): string {
  return `/* emulated device-intelligence loader ${EMULATED_LOADER_VERSION} (blackbox-capture emulator) */
(function emulatedLoader() {
  var w = window;
  var name = w.io_global_object_name || "IGLOO";
  var cfg = w[name] = w[name] || {};
  var L = cfg.loader = cfg.loader || {};
  /* Numeric versions as the loader carries them internally: with a trailing slash. */
  var NUMERIC = /^[0-9]{1,3}(\\.[0-9]{1,3}){2}\\/$/;
  function trace(message) {
    if (typeof cfg.trace_handler === "function") { try { cfg.trace_handler(message); } catch (e) {} }
  }
  /* "1"/"true" (any case) are true, "0"/"false" false; anything else the default, when it is a boolean. */
  function bool(value, fallback) {
    if (value !== null && value !== undefined) {
      var text = value.toString().toLowerCase();
      if (text === "1" || text === "true") return true;
      if (text === "0" || text === "false") return false;
    }
    return typeof fallback === "boolean" ? fallback : false;
  }
  function pathVersion(version) {
    trace("********** version before replace: " + version + " **********");
    trace('localNamespace[ "url_dots_to_dashes" ]: ' + L.url_dots_to_dashes);
    trace("numericVersionPattern.test( output ): " + NUMERIC.test(version));
    if (L.url_dots_to_dashes && NUMERIC.test(version)) version = version.replace(/\\./g, "-");
    trace("version after replace: " + version);
    return version;
  }
  if (L.loaderMain) {
    trace("loader: Loader script has already run, try reducing the number of places it's being included.");
    return false;
  }
  L.loaderMain = emulatedLoader;
  L.loaderVer = "${EMULATED_LOADER_VERSION}";

  var tp = bool(L.tp, true), fpStatic = bool(L.fp_static, true), fpDyn = bool(L.fp_dyn, true);
  var compat = bool(L.enable_legacy_compatibility), split = bool(L.tp_split);
  var configuredTpHost = L.tp_host;
  var tpHost = (configuredTpHost && configuredTpHost.replace(/\\/+$/, "")) || ${JSON.stringify(options.defaultTpHost)};
  var override = L.fp_static_override_uri;
  var hook = L.uri_hook !== undefined ? L.uri_hook + "/" : "/iojs/";
  var version = (L.version || "versionOrAliasIsRequired") + "/";
  var subkey = L.subkey ? w.encodeURIComponent(L.subkey) + "/" : "";
  var resource = L.tp_resource || "wdp.js";
  L.tp_host = tpHost;

  /* Flash: the third party follows the top-level setting, or io.enable_flash when fp.enable_flash is set too;
     the first party carries fp.enable_flash, false without it. */
  var fpFlashSetting = cfg.fp && cfg.fp.enable_flash, ioFlashSetting = cfg.io && cfg.io.enable_flash;
  var hasFpFlash = fpFlashSetting !== undefined && fpFlashSetting !== null;
  var hasIoFlash = ioFlashSetting !== undefined && ioFlashSetting !== null;
  var tpFlash = hasFpFlash && hasIoFlash ? bool(ioFlashSetting, true) : bool(cfg.enable_flash, true);
  var fpFlash = hasFpFlash ? bool(fpFlashSetting, true) : false;

  var query = "?loaderVer=" + L.loaderVer + "&compat=" + compat + "&tp=" + tp + "&tp_split=" + split +
    (configuredTpHost ? "&tp_host=" + w.encodeURIComponent(configuredTpHost) : "") +
    "&fp_static=" + fpStatic + "&fp_dyn=" + fpDyn +
    (override ? "&fp_static_uri=" + w.encodeURIComponent(override) : "");
  var fpQuery = query + "&flash=" + fpFlash, tpQuery = query + "&flash=" + tpFlash;

  if (!tp && !fpStatic) trace("loader: Not currently configured to load fp_static or tp script(s).");
  if (cfg.fp && cfg.fp.staticVer && cfg.fp.staticVer + "/" !== version) {
    version = pathVersion(cfg.fp.staticVer + "/");
    trace("loader: Configured version replaced with that from pre-loaded static script.");
  }

  /* Each entry: [url with a version placeholder, the version it was configured with]. */
  var firstParty = [], thirdParty = [];
  var staticOnPage = cfg.fp && cfg.fp.staticMain;
  if (fpStatic || staticOnPage) {
    /* "//" is collapsed on the first-party path only, before the version goes in. */
    var fpBase = (hook + "##version##" + subkey).replace(/\\/\\//g, "/");
    if (fpStatic) {
      if (staticOnPage) {
        if (compat && !cfg.fp.preCompatMain) trace("loader: enable_legacy_compatibility on, but included static does not have the compat wrapper.");
      } else if (override) firstParty.push([override, ""]);
      else firstParty.push([fpBase + "static_wdp.js" + fpQuery, version]);
    }
    if (fpDyn && !(cfg.fp && cfg.fp.dynMain)) firstParty.push([fpBase + "dyn_wdp.js" + fpQuery, version]);
    else if (cfg.fp && cfg.fp.dynMain) trace("loader: First party dynamic script has already been loaded, disable fp_dyn or make sure you're not manually including the dynamic file separately.");
  } else if (bool(L.fp_dyn)) {
    trace("loader: Invalid Config, first party dynamic script set to load without static.");
  }
  if (tp) {
    if (cfg.io && cfg.io.staticMain) trace("loader: Third party script has already been loaded.");
    else {
      var tpBase = tpHost + "/##version##" + subkey;
      if (split) {
        thirdParty.push([tpBase + "static_wdp.js" + tpQuery, version]);
        thirdParty.push([tpBase + "dyn_wdp.js" + tpQuery, version]);
        if (L.tp_resource) trace("loader: Invalid Config: both tp_resource and tp_split set. Ignoring tp_resource.");
      } else thirdParty.push([tpBase + resource + tpQuery, version]);
    }
  }

  /* Appends entry i of a chain; the next one only once this one has loaded. */
  function append(chain, list, i) {
    var entry = chain[i];
    var own = cfg[list] && cfg[list].staticVer;
    var resolved = pathVersion(own ? own + "/" : entry[1]);
    var src = entry[0].replace("##version##", resolved);
    var parts = src.split("?")[0].split("/");
    var file = parts[parts.length - 1].split(".")[0];
    if (NUMERIC.test(entry[1]) && resolved !== entry[1]) trace("loader: Overriding configured version with staticVer.");
    var script = document.createElement("script");
    script.setAttribute("src", src);
    script.addEventListener("error", function () { L[list + "_" + file + "_load_failure"] = "true"; });
    if (i + 1 < chain.length) script.onload = function () { append(chain, list, i + 1); };
    document.getElementsByTagName("head")[0].appendChild(script);
  }
  if (firstParty.length) append(firstParty, "fp", 0);
  if (thirdParty.length) append(thirdParty, "io", 0);
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
 * One collection script. It contributes a base64 chunk to the blackbox once per delay.
 * The scripts share their state on the config object and need nothing from the loader
 * but its settings and failure flags, so they run the same under the emulated loader
 * and under the vendor's real one. The blackbox is complete when every source this
 * configuration loads has finished, or can no longer deliver because its chain broke
 * (a failure flag of its list): then `bb_callback(bb, true)`, once.
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
  if (!cfg) return;
  var source = ${JSON.stringify(options.source)};
  var state = cfg.__bbcEmulator;
  if (!state) {
    state = { parts: {}, order: [], finished: {}, done: false, bb: "", filler: "" };
    while (state.filler.length < 800) state.filler += Math.random().toString(36).slice(2);
    Object.defineProperty(cfg, "__bbcEmulator", { value: state });
    cfg.getBlackbox = function () { return { blackbox: state.bb, finished: state.done }; };
    var bool = function (value, fallback) {
      if (value !== null && value !== undefined) {
        var text = value.toString().toLowerCase();
        if (text === "1" || text === "true") return true;
        if (text === "0" || text === "false") return false;
      }
      return typeof fallback === "boolean" ? fallback : false;
    };
    /* The sources this configuration loads, by loader list, as the loader decides them. */
    var chains = function () {
      var L = cfg.loader || {}, out = [];
      if (bool(L.fp_static, true)) out.push(["fp", bool(L.fp_dyn, true) ? ["fp_static", "fp_dyn"] : ["fp_static"]]);
      if (bool(L.tp, true)) out.push(["io", bool(L.tp_split) ? ["tp_static", "tp_dyn"] : ["tp"]]);
      return out;
    };
    /* A list whose script failed to load: the loader requests nothing after it. */
    var broken = function (list) {
      var L = cfg.loader || {};
      for (var key in L) if (key.indexOf(list + "_") === 0 && /_load_failure$/.test(key) && bool(L[key])) return true;
      return false;
    };
    var emit = function (complete) {
      if (typeof cfg.bb_callback === "function") cfg.bb_callback(state.bb, complete);
      else if (cfg.bbout_element_id) {
        var field = document.getElementById(cfg.bbout_element_id);
        if (field) field.value = state.bb;
      }
      if (complete && typeof cfg.trace_handler === "function") { try { cfg.trace_handler("emulator: collection complete"); } catch (e) {} }
    };
    state.settled = function () {
      if (!state.order.length) return false;
      var all = chains();
      for (var i = 0; i < all.length; i++) {
        if (broken(all[i][0])) continue;
        for (var j = 0; j < all[i][1].length; j++) if (!state.finished[all[i][1][j]]) return false;
      }
      return true;
    };
    /* "~~~" and "???" make the base64 carry "+" and "/", as real blackboxes do. */
    var encode = function () {
      var o = { v: (cfg.loader && cfg.loader.loaderVer) || "", s: state.order, p: state.parts, m: "~~~~~~~~~?????????" };
      var json = JSON.stringify(o);
      if (json.length < 760) { o.x = state.filler.slice(0, 760 - json.length - 7); json = JSON.stringify(o); }
      return ${JSON.stringify(BLACKBOX_PREFIX)} + w.btoa(json);
    };
    state.contribute = function (from, chunk, last) {
      if (state.done) return;
      if (!state.parts[from]) state.order.push(from);
      state.parts[from] = (state.parts[from] || "") + chunk;
      if (last) state.finished[from] = true;
      state.bb = encode();
      state.done = state.settled();
      emit(state.done);
    };
    /* A chain that breaks after the others finished leaves no script to say so: look again then.
       The loader sets its flag in the script's own listener, after this one: hence a task. */
    w.addEventListener("error", function (event) {
      if (!event.target || event.target.tagName !== "SCRIPT") return;
      setTimeout(function () {
        if (state.done || !state.settled()) return;
        state.done = true;
        emit(true);
      }, 0);
    }, true);
  }
  var marks = { fp_static: ["fp", "staticMain"], fp_dyn: ["fp", "dynMain"], tp: ["io", "staticMain"], tp_static: ["io", "staticMain"] }[source];
  if (marks) { cfg[marks[0]] = cfg[marks[0]] || {}; cfg[marks[0]][marks[1]] = true; }
  var delays = ${JSON.stringify(options.delaysMs)};
  var payload = ${JSON.stringify(payload)};
  var entropy = ${JSON.stringify(options.entropy)};
  var per = Math.ceil(entropy.length / delays.length);
  delays.forEach(function (ms, i) {
    setTimeout(function () {
      var chunk = (i === 0 ? payload + "|" : "") + entropy.slice(i * per, (i + 1) * per);
      state.contribute(source, chunk, i === delays.length - 1);
    }, ms);
  });
})();
`;
}
