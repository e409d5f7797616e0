// Not part of the package: a sketch of a bare capture, for the size decision only
// (scripts/size-peers.mjs measures it). It checks option types and the loader URL, writes
// the config, injects once (nonce, Trusted Types), resolves on completion and rejects on a
// loader error or the time limit: none of the full package's other features.
const KEYS = { loaderUrl: 'string', globalName: 'string', uriHook: 'string', version: 'string', subkey: 'string', timeoutMs: 'number', nonce: 'string' };
export class BlackboxCaptureError extends Error {
  constructor(code, message, details = {}) {
    super('[blackbox-capture] ' + code + ': ' + message);
    this.name = 'BlackboxCaptureError';
    this.code = code;
    Object.assign(this, details);
  }
}
const fail = (code, message, details) => { throw new BlackboxCaptureError(code, message, details); };
let running;
let policy;
export function captureBlackbox(options) {
  return (running ??= new Promise((resolve, reject) => {
    for (const key in options) if (typeof options[key] !== KEYS[key]) fail('invalid_option', key);
    const url = options.loaderUrl;
    if (!url || /[\s\\]|^\/\//.test(url) || (/^[a-z][\w+.-]*:/i.test(url) && new URL(url).protocol !== 'https:')) fail('invalid_option', 'loaderUrl');
    if (typeof window === 'undefined') fail('not_browser', '');
    const name = options.globalName ?? window.io_global_object_name ?? 'IGLOO';
    if (name !== 'IGLOO') window.io_global_object_name = name;
    const config = (window[name] ??= {});
    const loader = (config.loader ??= {});
    loader.uri_hook ??= options.uriHook ?? '/iojs';
    loader.version ??= options.version ?? 'general5';
    if (options.subkey) loader.subkey = options.subkey;
    const page = config.bb_callback;
    let latest;
    config.bb_callback = (blackbox, complete) => {
      page?.(blackbox, complete);
      latest = blackbox;
      if (complete) resolve(blackbox);
    };
    const tag = document.createElement('script');
    tag.async = true;
    const nonce = options.nonce ?? document.querySelector('script[nonce]')?.nonce;
    if (nonce) tag.nonce = nonce;
    try { policy ??= window.trustedTypes?.createPolicy('blackbox-capture', { createScriptURL: (u) => u }) ?? null; } catch { policy = null; }
    tag.src = policy ? policy.createScriptURL(url) : url;
    tag.onerror = () => { tag.remove(); reject(new BlackboxCaptureError('loader_failed', url, { url })); };
    document.head.append(tag);
    setTimeout(() => reject(new BlackboxCaptureError('timeout', '', { blackbox: latest })), options.timeoutMs ?? 15000);
  }).catch((error) => { running = undefined; throw error; }));
}
