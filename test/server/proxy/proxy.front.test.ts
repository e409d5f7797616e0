// The kit's proxy (createFirstPartyProxy behind toNodeHandler, its defaults) in front of the
// emulator's collector: the reference the recipes of proxy/ are held to.
import { createFirstPartyProxy } from '../../../src/server/proxy/proxy.js';
import { toNodeHandler } from '../../../src/server/adapter/node/handler.js';
import { frontConformance } from '../../support/front-conformance.js';
import { listening } from '../../support/fronts.js';

function startKit(collectorUrl: string) {
  const iojs = createFirstPartyProxy({ collectorUrl });
  return listening(
    toNodeHandler((request, context) =>
      iojs.matches(request) ? iojs(request, context) : new Response(null, { status: 404 }),
    ),
  );
}

frontConformance("the kit's proxy (createFirstPartyProxy)", startKit, {
  vendorCookies: 'namespaced',
  hostilePaths: 'refused',
});
