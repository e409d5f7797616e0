// The shipped apache recipe, run by a real apache2 in front of the emulator's collector.
import { describe } from 'vitest';
import { frontConformance } from '../support/front-conformance.js';
import { APACHE, available, startApache } from '../support/fronts.js';

if (available(APACHE, 'apache2'))
  frontConformance('Apache httpd with proxy/apache/iojs.conf', startApache, {
    vendorCookies: 'namespaced',
    hostilePaths: 'refused',
  });
else describe.skip(`apache2 not found at ${APACHE}`, () => {});
