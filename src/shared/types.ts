/**
 * Types shared by the browser package, the server kit and the emulator.
 * Types only: nothing here may emit code, so no side pulls in another.
 */

/** The vendor loader's boolean: it also accepts "1"/"0" and "true"/"false". */
export type VendorBoolean = boolean | '1' | '0' | 'true' | 'false';

/** Loader settings the vendor documents beside `version`, `uri_hook` and `subkey`. */
interface VendorLoaderPassthrough {
  /** Load the third-party script (default true). */
  tp?: VendorBoolean;
  /** Load the first-party static script (default true). */
  fp_static?: VendorBoolean;
  /** Load the first-party dynamic script (default true; needs `fp_static`). */
  fp_dyn?: VendorBoolean;
  /** Split the third-party script into a static and a dynamic part (default false). */
  tp_split?: VendorBoolean;
  /** Origin of the vendor's third-party host (default https://mpsnare.iesnare.com). */
  tp_host?: string;
  /** File name of the third-party script (default wdp.js). */
  tp_resource?: string;
  /** Replace the first-party static script's address. */
  fp_static_override_uri?: string;
  enable_legacy_compatibility?: VendorBoolean;
  url_dots_to_dashes?: VendorBoolean;
}

/** Top-level vendor keys seen in real configurations. */
interface VendorTopLevelPassthrough {
  /** Default true in the loader; real configurations set it false. */
  enable_flash?: VendorBoolean;
  install_flash?: VendorBoolean;
}

/** Typed passthrough of the vendor keys that have no option of their own. */
export type VendorPassthrough = VendorLoaderPassthrough & VendorTopLevelPassthrough;

/** `config.loader` as the loader reads and writes it. */
export interface VendorLoaderConfig extends VendorLoaderPassthrough {
  version?: string;
  uri_hook?: string;
  subkey?: string;
  trace_handler?: (message: string) => void;
  /** Set by the loader when it runs: its run-once marker. */
  loaderMain?: unknown;
  /** Set by the loader when it runs. */
  loaderVer?: string;
  fp_static_wdp_load_failure?: string;
  fp_dyn_wdp_load_failure?: string;
  io_wdp_load_failure?: string;
  io_static_wdp_load_failure?: string;
  io_dyn_wdp_load_failure?: string;
  [key: string]: unknown;
}

/** The page's global configuration object (`window.IGLOO` by default). */
export interface VendorConfig extends VendorTopLevelPassthrough {
  loader?: VendorLoaderConfig;
  bbout_element_id?: string;
  bb_callback?: (blackbox: string, complete: boolean) => void;
  enable_rip?: VendorBoolean;
  /** Where loader 5.2.2 sends its trace messages (the spec names `loader.trace_handler`). */
  trace_handler?: (message: string) => void;
  /** Added by the collection scripts. */
  getBlackbox?: () => { blackbox: string; finished: boolean };
  [key: string]: unknown;
}

/**
 * How a capture ended, for the page (`onOutcome`, the `blackboxoutcome` event) and for the
 * server (it travels with the blackbox, or alone when there is none). What each kind means is
 * its row in `OUTCOMES` (src/server/endpoint/outcome.ts), which docs/browser.md lists.
 */
export type CaptureOutcomeKind =
  | 'complete'
  | 'degraded-first-party'
  | 'degraded-third-party'
  | 'timeout-partial'
  | 'collection_failed'
  | 'loader_failed'
  | 'consent_denied'
  | 'aborted';

export interface CaptureOutcome {
  outcome: CaptureOutcomeKind;
  /** The collection scripts that failed, e.g. `fp_static_wdp` (see the error's `scripts`). */
  scripts: string[];
  /** Milliseconds from the call to its final value or its failure. */
  durationMs: number;
}
