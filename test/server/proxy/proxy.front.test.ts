// The kit's proxy (createFirstPartyProxy behind toNodeHandler, its defaults) in front of the
// emulator's collector: the reference the recipes of proxy/ are held to.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFirstPartyProxy } from '../../../src/server/proxy/proxy.js';
import { toNodeHandler } from '../../../src/server/adapter/node/handler.js';
import { frontConformance } from '../../support/front-conformance.js';

async function startKit(collectorUrl: string) {
  const iojs = createFirstPartyProxy({ collectorUrl });
  const server = createServer(
    toNodeHandler((request, context) =>
      iojs.matches(request) ? iojs(request, context) : new Response(null, { status: 404 }),
    ),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

frontConformance("the kit's proxy (createFirstPartyProxy)", startKit, {
  vendorCookies: 'namespaced',
  hostilePaths: 'refused',
});
