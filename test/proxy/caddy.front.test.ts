// The shipped caddy recipe, run by a real caddy in front of the emulator's collector.
import { describe } from 'vitest';
import { frontConformance } from '../support/front-conformance.js';
import { CADDY, available, startCaddy } from '../support/fronts.js';

if (available(CADDY, 'caddy'))
  frontConformance('Caddy with proxy/caddy/iojs.caddy', startCaddy, {
    vendorCookies: 'dropped',
    hostilePaths: 'refused',
  });
else describe.skip(`caddy not found at ${CADDY}`, () => {});
