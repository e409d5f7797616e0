/**
 * `blackbox-capture/tcf`: consent from an IAB TCF v2 CMP, for the `consent` option.
 * `captureBlackbox({ loaderUrl, consent: tcfConsent({ vendorId, purposes }) })` waits
 * for the user's choice (or the one the CMP has stored) and grants only when GDPR does
 * not apply, or the vendor and every purpose listed have consent.
 */

export interface TcfConsentOptions {
  /** The device-intelligence vendor's ID in the IAB Global Vendor List. */
  vendorId: number;
  /** The purposes that need consent. Default [1] (store and/or access information on a device). */
  purposes?: number[];
}

interface TcData {
  gdprApplies?: boolean;
  eventStatus?: string;
  listenerId?: number;
  vendor?: { consents?: Record<string, boolean> };
  purpose?: { consents?: Record<string, boolean> };
}
type TcfApi = (
  command: string,
  version: number,
  callback: (data: TcData, success: boolean) => void,
  parameter?: unknown,
) => void;

/**
 * A consent function: each call asks the page's `__tcfapi` and resolves `true` or `false`
 * once a choice exists. No CMP on the page, or a CMP that fails, rejects: nothing is
 * collected without consent.
 */
export function tcfConsent({ vendorId, purposes = [1] }: TcfConsentOptions): () => Promise<boolean> {
  if (!Number.isInteger(vendorId) || vendorId <= 0)
    throw new TypeError("[blackbox-capture] tcfConsent: vendorId must be the vendor's IAB Global Vendor List ID");
  return () =>
    new Promise<boolean>((resolve, reject) => {
      const api = (globalThis as { __tcfapi?: TcfApi }).__tcfapi;
      if (typeof api !== 'function')
        return reject(new Error('[blackbox-capture] tcfConsent: no __tcfapi on the page (no TCF v2 CMP)'));
      api('addEventListener', 2, (data, success) => {
        if (!success) return reject(new Error('[blackbox-capture] tcfConsent: the CMP failed'));
        // Until the user has chosen (or the CMP has loaded a stored choice), there is no answer.
        if (data.gdprApplies !== false && data.eventStatus !== 'tcloaded' && data.eventStatus !== 'useractioncomplete')
          return;
        if (data.listenerId !== undefined) api('removeEventListener', 2, () => {}, data.listenerId);
        resolve(
          data.gdprApplies === false ||
            (!!data.vendor?.consents?.[vendorId] && purposes.every((p) => !!data.purpose?.consents?.[p])),
        );
      });
    });
}
