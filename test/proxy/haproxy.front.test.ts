// The shipped haproxy recipe, run by a real haproxy in front of the emulator's collector.
import { describe } from 'vitest';
import { frontConformance } from '../support/front-conformance.js';
import { HAPROXY, available, startHaproxy } from '../support/fronts.js';

if (available(HAPROXY, 'haproxy'))
  frontConformance('HAProxy with proxy/haproxy/iojs.cfg', startHaproxy, {
    vendorCookies: 'namespaced',
    hostilePaths: 'refused',
  });
else describe.skip(`haproxy not found at ${HAPROXY}`, () => {});
