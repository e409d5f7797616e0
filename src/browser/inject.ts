/** Script-tag injection that survives strict Content Security Policies. */

interface TrustedTypesPolicy {
  createScriptURL(url: string): unknown;
}
type TrustedTypesWindow = Window & {
  trustedTypes?: { createPolicy(name: string, rules: { createScriptURL(url: string): string }): TrustedTypesPolicy };
};

/** undefined: not tried yet; null: Trusted Types absent or the policy name is not allowed. */
let policy: TrustedTypesPolicy | null | undefined;

/**
 * The value to assign to `script.src`: a TrustedScriptURL where the page enforces
 * Trusted Types. The policy passes only the URL it is handed, and it is handed
 * only loader URLs that option validation accepted.
 */
function scriptUrl(url: string): string {
  if (policy === undefined) {
    try {
      policy = (window as TrustedTypesWindow).trustedTypes?.createPolicy('blackbox-capture', { createScriptURL: (u) => u }) ?? null;
    } catch {
      policy = null; // the page's CSP does not allow our policy name: fall back to a plain string
    }
  }
  return (policy ? policy.createScriptURL(url) : url) as string;
}

/** The page's CSP nonce, read the way browsers expose it (the attribute is hidden, the property is not). */
export function pageNonce(): string | undefined {
  const script = document.querySelector<HTMLScriptElement>('script[nonce]');
  return (script && (script.nonce || script.getAttribute('nonce'))) || undefined;
}

/** A script tag already on the page for this URL (ours from an earlier call, or the page's own). */
export function findScript(href: string): HTMLScriptElement | undefined {
  const scripts = document.querySelectorAll<HTMLScriptElement>('script[src]');
  for (let i = 0; i < scripts.length; i++) if (scripts[i]!.src === href) return scripts[i];
  return undefined;
}

/**
 * Appends an async script. Listeners go on before the tag is inserted, because
 * some environments load and run it during appendChild.
 */
export function injectScript(
  href: string,
  nonce: string | undefined,
  onLoad: () => void,
  onError: (cause?: unknown) => void,
): HTMLScriptElement {
  const script = document.createElement('script');
  script.async = true;
  if (nonce) script.nonce = nonce;
  script.addEventListener('load', onLoad);
  script.addEventListener('error', () => onError());
  try {
    script.src = scriptUrl(href);
  } catch (cause) {
    onError(cause); // Trusted Types enforced without an allowed policy
    return script;
  }
  (document.head || document.documentElement).appendChild(script);
  return script;
}
