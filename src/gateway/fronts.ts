/**
 * A front left out of TRUSTED_FRONTS, said: its X-Forwarded-For is ignored (the Node adapter's
 * onForwardIgnored), so every shopper behind it counts as one address, and nothing else would
 * say so (docs/gateway.md#trusted-fronts). The usual case: the gateway in a container whose
 * port is published on the host, where the host's front arrives from the container network's
 * gateway address, not from 127.0.0.1.
 */
import { sourceMatcher } from '../server/parts.js';
import type { LogFields } from './log.js';

const FORWARD_IGNORED = 'forward_ignored';

/** Loopback, private, shared (CGNAT) and link-local addresses: where a shop's own front runs. */
const isLocal = sourceMatcher([
  '127.0.0.0/8',
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '169.254.0.0/16',
  '::1',
  'fc00::/7',
  'fe80::/10',
]);

/**
 * Tells `limited` (one line per code each 10 s) of a request whose X-Forwarded-For was ignored,
 * when it came from a local address; from a public one it is a client's own header, not a
 * front's, and nothing to say.
 */
export const untrustedFrontTeller =
  (limited: (key: string, message: string, fields: LogFields) => void) =>
  (address: string): void => {
    if (!isLocal(address)) return;
    limited(
      FORWARD_IGNORED,
      `${FORWARD_IGNORED}: X-Forwarded-For from ${address} ignored, ${address} is not in TRUSTED_FRONTS: if a front of yours runs there, every shopper behind it counts as that one address (docs/gateway.md#trusted-fronts)`,
      { level: 'warn', event: 'gateway', code: FORWARD_IGNORED },
    );
  };
