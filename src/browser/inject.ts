/** Script-tag injection that survives strict Content Security Policies. */

type TrustedTypesPolicy = { createScriptURL(url: string): string };
type TrustedTypesFactory = { createPolicy(name: string, rules: TrustedTypesPolicy): TrustedTypesPolicy };

/** undefined: not tried yet; null: Trusted Types absent, or our policy name is not allowed. */
let policy: TrustedTypesPolicy | null | undefined;

/** The page's CSP nonce, read the way browsers expose it (the attribute is hidden, the property is not). */
export function pageNonce(): string | undefined {
  const tag = document.querySelector<HTMLScriptElement>('script[nonce]');
  return (tag && (tag.nonce || tag.getAttribute('nonce'))) || undefined;
}

/** A script tag already on the page for this URL (the page's own loader tag). */
export const findScript = (href: string): HTMLScriptElement | undefined =>
  Array.from(document.querySelectorAll<HTMLScriptElement>('script[src]')).find((tag) => tag.src === href);

/**
 * Appends an async script. Listeners go on before the tag is inserted, because
 * some environments load and run it during appendChild. `src` goes through a
 * Trusted Types policy where the page has them; the policy passes only the URL it
 * is handed, and it is handed only loader URLs that option validation accepted.
 */
export function injectScript(href: string, nonce: string | undefined, onLoad: () => void, onError: (cause?: unknown) => void): HTMLScriptElement {
  const tag = document.createElement('script');
  tag.async = true;
  if (nonce) tag.nonce = nonce;
  tag.addEventListener('load', onLoad);
  tag.addEventListener('error', () => onError());
  try {
    if (policy === undefined) {
      try {
        policy = (window as { trustedTypes?: TrustedTypesFactory }).trustedTypes?.createPolicy('blackbox-capture', { createScriptURL: (u) => u }) ?? null;
      } catch {
        policy = null; // the page's CSP does not allow our policy name: a plain string may still pass
      }
    }
    tag.src = policy ? policy.createScriptURL(href) : href;
  } catch (cause) {
    onError(cause); // Trusted Types enforced without an allowed policy
    return tag;
  }
  (document.head || document.documentElement).appendChild(tag);
  return tag;
}
