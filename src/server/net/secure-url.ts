/** The kit's URL policy: every address it sends a secret to is https, except on loopback. */
import { DeviceRiskError, ERR_INSECURE_URL, ERR_INVALID_CONFIGURATION } from '../errors.js';
import { urlMessages } from '../messages.js';

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/** https, or http on a loopback address (local testing against the emulator). */
export function requireSecureUrl(value: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, urlMessages.notAUrl(what));
  }
  if (url.username || url.password) throw new DeviceRiskError(ERR_INVALID_CONFIGURATION, urlMessages.credentials(what));
  if (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname))) return url;
  throw new DeviceRiskError(ERR_INSECURE_URL, urlMessages.insecure(what, url.origin));
}
